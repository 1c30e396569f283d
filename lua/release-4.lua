--[[
  Releases one hold of a grant (compare-and-delete on the token). When the last hold goes the
  lock is handed to the queue, unless the lease of a vanished Hold stream may still run: then
  it stays closed until that lease (plus its lock-delay) has ended.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] token
  ARGV[2] hold id      a Hold stream's hold; '' for one taken by Acquire, or else the newest stream's
  ARGV[3] vanished     1 when the stream ended without its holder's word (connection lost, server
                       ending it): its client may still count on the lease, so the lock stays
                       closed until the lease's current expiry plus the lock delay
  ARGV[4] lock delay   ms added after a vanished holder's lease
  ARGV[5] its lease    with vanished: ms the holder's own lease may still run, when its server
                       knows ('' for the grant's whole lease, which reentrant holds may extend)
  ARGV[6] server id    the releasing server's ('' for none): the queue hands the lock to that
                       server's own waiters (ids '<server id>.…') with their full lease at once,
                       and the reply names them, so the server answers them without a claim
  ARGV[7] why          with vanished: why its stream ended, for watchers (disconnected, max_hold,
                       backend_unavailable, server_shutdown); '' or absent: 'disconnected'

  Returns
    {1, 0, holdId}           freed (or closed until a vanished holder's lease ends); holdId is
                             the Hold stream's hold given back, '' for one taken by Acquire
    {0, holdCount, holdId}   still held this many times
    {-1}                     the token (or that hold) holds nothing
  A 4th element, when the queue served waiters of the server id: {{waiter id, token, fence,
  lease ms, hold count, hold id}...}, grants already made, which that server must answer (or give back).
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, holdId, vanished, lockDelay = ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4])
local vanishedLeaseMs = tonumber(ARGV[5] or '')
local serverId = ARGV[6] or ''

local grant = liveGrant(token)
if grant and holdId ~= '' and not findHold(grant, holdId) then grant = nil end
if not grant then
  if settle() then keepServed() end
  return { -1 }
end

if holdId == '' and unnamedHolds(grant, EXCLUSIVE) + unnamedHolds(grant, SHARED) == 0 then
  holdId = string.sub(grant.h[#grant.h], 2)
end
if serverId ~= '' then handOffPrefix = serverId .. '.' end
local vanishedUntil = nil
if vanished then
  vanishedUntil = leaseExpiry(token)
  if vanishedLeaseMs then vanishedUntil = math.min(vanishedUntil, now + vanishedLeaseMs) end
  vanishedUntil = vanishedUntil + lockDelay
end
local left = dropHold(token, grant, holdId, 0, vanishedUntil)
if not vanished then
  publishEvent('released', grant.f)
elseif left == 0 then
  local why = ARGV[7] or ''
  publishEvent('lost:' .. (why ~= '' and why or 'disconnected'), grant.f)
end
-- An abandoned grant's expiry may have moved out: the full upkeep then (vanished holders are rare).
if settle() then keepServed() end
if grant.a == 1 then keepKeys() else keepIdle() end
local reply = { left == 0 and 1 or 0, left, holdId }
if #handedOff > 0 then reply[4] = handedOff end
return reply
