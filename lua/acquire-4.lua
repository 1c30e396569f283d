--[[
  Acquires a lock: re-enters it for an owner that holds it, grants it when it fits and nobody
  queues ahead (no barging), otherwise queues the caller (or refuses a try-once caller).

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] token         fresh secret token for a new grant (and for the waiter's future grant)
  ARGV[2] owner         '' for no reentrancy
  ARGV[3] ttl           lease ms
  ARGV[4] mode          1 exclusive, 2 shared
  ARGV[5] limit         1 plain or read-write lock, N > 1 semaphore
  ARGV[6] request id    '' for none
  ARGV[7] waiter id     '' to try once; otherwise queue under this id when not granted
  ARGV[8] entry lease   ms a queue entry lives unless its server refreshes it
  ARGV[9] hold id       names the hold when a Hold stream asks; '' for Acquire
  ARGV[10] max waiters  queue no one past this many waiters; '' or 0 for no cap
  ARGV[11] value        published to watchers with a new grant ('' or absent for none)
  ARGV[12] wait as      the caller's identity for deadlock detection when owner is '' (a
                        session's; no reentrancy): kept with its waiter and grant ('' or absent for none)

  Returns
    {1, token, fence, leaseLeft, holdCount}   granted (or re-entered, or the request id's live grant)
    {0, msToNextExpiry}                       not granted, try once
    {2, msToNextExpiry}                       queued
    {-3, limit}                               the lock has another limit
    {-4}                                      owner holds it shared and asks for exclusive
    {-5}                                      the request id was used by another owner or with other parameters
    {-6, maxWaiters}                          not queued: the lock has max waiters queued already
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, owner, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local mode, limit, requestId = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local waiterId, entryLease, holdId = ARGV[7], tonumber(ARGV[8]), ARGV[9]
local maxWaiters = tonumber(ARGV[10]) or 0
local request = { o = owner, m = mode, l = limit, t = ttl, r = requestId, h = holdId }
if (ARGV[11] or '') ~= '' then request.v = ARGV[11] end
if (ARGV[12] or '') ~= '' then request.w = ARGV[12] end

local served = settle()

-- Every refusal below goes through here, so that a key settle() made anew gets its TTL.
local function refuse(reply)
  if served then keepServed() end
  return reply
end

-- A replay gets the live grant back only when it asks exactly what the first request asked:
-- otherwise a known request id would hand anyone the grant's token.
if requestId ~= '' then
  local prior = loadRequest(requestId)
  if prior then
    if prior.o ~= owner or prior.m ~= mode or prior.l ~= limit or prior.t ~= ttl then return refuse({ -5 }) end
    local grant = liveGrant(prior.k)
    if grant then return refuse(grantReply(prior.k, grant)) end
  end
end

-- What settle() saw still holds unless it served someone (nothing above changed the lock).
local first, queueEmpty = settledFirst, settledEmpty
if first == nil then
  first = redis.call('ZRANGE', holdersKey, 0, 0)[1] or false
  queueEmpty = redis.call('EXISTS', queueKey) == 0
end
if first or not queueEmpty then
  local lockLimit = tonumber(redis.call('HGET', dataKey, 'limit'))
  if lockLimit and lockLimit ~= limit then return refuse({ -3, lockLimit }) end
end

if owner ~= '' then
  local held = redis.call('HGET', dataKey, 'o:' .. owner)
  local grant = held and liveGrant(held)
  if grant then
    if not reenter(held, grant, request, now + ttl) then return refuse({ -4 }) end
    keepKeys()
    return grantReply(held, grant)
  end
end

if queueEmpty and fits(mode, limit, first) then
  local grant = createGrant(token, request, now + ttl)
  keepKeysUntil(math.max(now + ttl, servedUntil), served or not first)
  publishEvent('granted', grant.f)
  return { 1, token, grant.f, ttl, holdCount(grant) }
end

if waiterId == '' then return refuse({ 0, msToNextExpiry() }) end
if maxWaiters > 0 and redis.call('ZCARD', queueKey) >= maxWaiters then return refuse({ -6, maxWaiters }) end

local arrival = redis.call('HINCRBY', dataKey, 'seq', 1)
redis.call('ZADD', queueKey, arrival, waiterId)
redis.call('HSET', dataKey, 'limit', limit)
-- q: when it was queued (this slot's TIME), which a deadlock walk reads to find the youngest wait.
request.k, request.e, request.wl, request.g, request.q = token, now + entryLease, entryLease, 0, now
saveRecord('w:' .. waiterId, request)
-- A waiting queue keeps the keys RETAIN_MS beyond now (keepKeys' rule); the leases already had theirs.
keepKeysUntil(math.max(now + RETAIN_MS, servedUntil), served, queueEmpty)
return { 2, msToNextExpiry() }
