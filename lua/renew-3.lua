--[[
  Renews a live grant's lease to now + ttl.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data (see includes/state)

  ARGV[1] token
  ARGV[2] ttl ms     0 keeps the grant's lease length

  Returns
    {1, ttl}        renewed for ttl ms
    {-1, taken}     the token holds nothing; taken is 1 when someone else holds the lock now
]]
local holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]
local token, ttl = ARGV[1], tonumber(ARGV[2])

--- @include "includes/clock"
--- @include "includes/state"

local grant = liveGrant(token)
if not grant then
  local othersLive = redis.call('ZCOUNT', holdersKey, '(' .. now, '+inf') - (leaseExpiry(token) and 1 or 0)
  if othersLive > 0 then return { -1, 1 } end
  return { -1, 0 }
end
if ttl == 0 then ttl = grant.t end
redis.call('ZADD', holdersKey, now + ttl, token)
keepKeysUntil(now + ttl)
return { 1, ttl }
