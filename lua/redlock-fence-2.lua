--[[
  Redlock, on one node: writes a grant's fencing token, if the grant still holds its vote here.
  A grant is reported only once a majority has this write, so any later grant, which needs a
  majority of votes and so meets one of these nodes, reads a token at least this high.

  KEYS[1] lease    KEYS[2] fence (see redlock-acquire-2)

  ARGV[1] token       the grant's secret token
  ARGV[2] fence       its fencing token (decimal)
  ARGV[3] retain ms   how long the node remembers the highest token (refreshed by every grant)

  Returns
    1   written
    0   the vote is gone here (expired, or never given): not written
]]
local leaseKey, fenceKey = KEYS[1], KEYS[2]
local token, fence, retainMs = ARGV[1], ARGV[2], tonumber(ARGV[3])

if redis.call('HGET', leaseKey, 't') ~= token then return 0 end
local latest = redis.call('GET', fenceKey)
if latest == false or tonumber(latest) < tonumber(fence) then latest = fence end
redis.call('SET', fenceKey, latest, 'PX', retainMs)
redis.call('HSET', leaseKey, 'f', fence)
return 1
