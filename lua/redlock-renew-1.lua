--[[
  Redlock, on one node: extends a grant's vote here to ttl from now. It never shortens it.

  KEYS[1] lease (see redlock-acquire-2)

  ARGV[1] token
  ARGV[2] ttl ms   0: the grant's own lease length

  Returns
    ttl   renewed here: the lease now ends at least ttl ms from now (the ttl used, > 0)
    0     the vote is gone here
]]
local leaseKey = KEYS[1]
local token, ttl = ARGV[1], tonumber(ARGV[2])

if redis.call('HGET', leaseKey, 't') ~= token then return 0 end
if ttl == 0 then ttl = tonumber(redis.call('HGET', leaseKey, 'l')) end
if redis.call('PTTL', leaseKey) < ttl then redis.call('PEXPIRE', leaseKey, ttl) end
return ttl
