--[[
  Releases one hold of a grant (compare-and-delete on the token). When the last hold goes the
  lock is handed to the queue, unless a lock-delay keeps it closed for a while first.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] token
  ARGV[2] lock delay ms   0 frees at once; > 0 (a holder that vanished) keeps the lock unavailable that long

  Returns
    {1, 0}           freed
    {0, holdCount}   still held this many times
    {-1}             the token holds nothing
]]
local holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, lockDelay = ARGV[1], tonumber(ARGV[2])

--- @include "includes/clock"
--- @include "includes/state"

local grant = liveGrant(token)
if not grant then
  settle()
  return { -1 }
end

local remaining = holdCount(grant) - 1
if remaining == 0 and lockDelay > 0 then
  -- Nobody may enter before the delay ends; the expiry then frees it like any other lease.
  grant.a = 1
  saveRecord('g:' .. token, grant)
  redis.call('ZADD', holdersKey, now + lockDelay, token)
  if redis.call('ZCARD', queueKey) > 0 then redis.call('SPUBLISH', channel, 'd ' .. lockDelay) end
else
  dropHold(token, grant, 0)
end
settle()
keepKeys()
if remaining == 0 then return { 1, 0 } end
return { 0, remaining }
