--[[
  Says whether a fencing token belongs to a live holder right now.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data (see includes/state)

  ARGV[1] fencing token (decimal string)

  Returns {live (1/0), ttlLeft, mode, lastFence}
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]
local fence = ARGV[1]

local lastFence = redis.call('HGET', dataKey, 'fence') or '0'
local holders = redis.call('ZRANGEBYSCORE', holdersKey, '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #holders, 2 do
  local grant = loadRecord('g:' .. holders[i])
  if grant and grant.f == fence and grant.a ~= 1 then
    return { 1, tonumber(holders[i + 1]) - now, modeOf(grant), lastFence }
  end
end
return { 0, 0, 0, lastFence }
