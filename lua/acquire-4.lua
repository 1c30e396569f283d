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

  Returns
    {1, token, fence, ttl, holdCount}   granted (or re-entered, or the request id's live grant)
    {0, msToNextExpiry}                 not granted, try once
    {2, msToNextExpiry}                 queued
    {-3, limit}                         the lock has another limit
    {-4}                                owner holds it shared and asks for exclusive
]]
local holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, owner, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local mode, limit, requestId = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local waiterId, entryLease = ARGV[7], tonumber(ARGV[8])

--- @include "includes/clock"
--- @include "includes/state"

settle()

if requestId ~= '' then
  local prior = redis.call('HGET', dataKey, 'r:' .. requestId)
  local grant = prior and liveGrant(prior)
  if grant then return grantReply(prior, grant) end
end

local busy = redis.call('ZCARD', holdersKey) > 0 or redis.call('ZCARD', queueKey) > 0
local lockLimit = tonumber(redis.call('HGET', dataKey, 'limit'))
if busy and lockLimit and lockLimit ~= limit then return { -3, lockLimit } end

if owner ~= '' then
  local held = redis.call('HGET', dataKey, 'o:' .. owner)
  local grant = held and liveGrant(held)
  if grant then
    if not reenter(held, grant, mode, requestId, now + ttl) then return { -4 } end
    keepKeys()
    return grantReply(held, grant)
  end
end

if redis.call('ZCARD', queueKey) == 0 and fits(mode, limit) then
  local grant = createGrant(token, owner, mode, limit, ttl, requestId, now + ttl)
  keepKeys()
  return grantReply(token, grant)
end

if waiterId == '' then return { 0, msToNextExpiry() } end

local arrival = redis.call('HINCRBY', dataKey, 'seq', 1)
redis.call('ZADD', queueKey, arrival, waiterId)
redis.call('HSET', dataKey, 'limit', limit)
saveRecord('w:' .. waiterId, {
  k = token, o = owner, m = mode, l = limit, t = ttl, r = requestId,
  e = now + entryLease, wl = entryLease, g = 0,
})
keepKeys()
return { 2, msToNextExpiry() }
