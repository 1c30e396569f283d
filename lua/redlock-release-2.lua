--[[
  Redlock, on one node: compare-and-delete of a grant's vote, and a wake-up for waiters.

  KEYS[1] lease (see redlock-acquire-2)    KEYS[2] channel    waiters on any server listen here

  ARGV[1] token

  Returns
    1   released here
    0   the token held nothing here
]]
local leaseKey, channel = KEYS[1], KEYS[2]
local token = ARGV[1]

if redis.call('HGET', leaseKey, 't') ~= token then return 0 end
redis.call('DEL', leaseKey)
redis.call('PUBLISH', channel, 'released')
return 1
