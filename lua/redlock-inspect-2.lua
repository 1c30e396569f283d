--[[
  Redlock, on one node: what this node says of a lock, without its token.

  KEYS[1] lease    KEYS[2] fence (see redlock-acquire-2)

  Returns
    {owner, fencingToken, leaseLeft, latestFence, holderId}   a vote is given here; holderId is
                                                             a digest of the token, to count
                                                             which nodes agree on one holder
    {'', '0', -2, latestFence, ''}                           free here
]]
local leaseKey, fenceKey = KEYS[1], KEYS[2]

local latest = redis.call('GET', fenceKey) or '0'
local lease = redis.call('HMGET', leaseKey, 'o', 'f', 't')
if not lease[3] then return { '', '0', -2, latest, '' } end
return { lease[1], lease[2] or '0', redis.call('PTTL', leaseKey), latest, redis.sha1hex(lease[3]) }
