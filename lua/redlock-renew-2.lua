--[[
  Redlock, on one node: extends a grant's vote here to ttl from now. It never shortens it.

  KEYS[1] lease (see redlock-acquire-2)
  KEYS[2] released    the token last released with Release here (see redlock-release-3)

  ARGV[1] token
  ARGV[2] ttl ms   0: the grant's own lease length
  ARGV[3] '1': answer a renewal as {ttl, fencing token written here or false} (for a signed fence)

  Returns
    ttl   renewed here: the lease now ends at least ttl ms from now (the ttl used, > 0)
    0     the vote is gone here
    -1    the vote was given back here with Release (the holder's word, not an expiry)
]]
local leaseKey, releasedKey = KEYS[1], KEYS[2]
local token, ttl = ARGV[1], tonumber(ARGV[2])

if redis.call('HGET', leaseKey, 't') ~= token then
  if redis.call('GET', releasedKey) == token then return -1 end
  return 0
end
if ttl == 0 then ttl = tonumber(redis.call('HGET', leaseKey, 'l')) end
if redis.call('PTTL', leaseKey) < ttl then redis.call('PEXPIRE', leaseKey, ttl) end
if ARGV[3] == '1' then return {ttl, redis.call('HGET', leaseKey, 'f')} end
return ttl
