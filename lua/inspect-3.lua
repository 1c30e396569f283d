--[[
  Describes a lock without changing it and without revealing tokens.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data (see includes/state)

  Returns {lastFence, limit, waiters, {owner, fence, ttlLeft, holdCount, mode, value}...}
  A holder abandoned to a lock-delay shows with hold count 0.
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]

local reply = { redis.call('HGET', dataKey, 'fence') or '0', 0, 0 }
local holders = redis.call('ZRANGEBYSCORE', holdersKey, '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #holders, 2 do
  local grant = loadRecord('g:' .. holders[i])
  if grant then
    local count = holdCount(grant)
    if grant.a == 1 then count = 0 end
    reply[#reply + 1] = { grant.o, grant.f, tonumber(holders[i + 1]) - now, count, modeOf(grant), grant.v or '' }
  end
end
for _, waiterId in ipairs(redis.call('ZRANGE', queueKey, 0, -1)) do
  if waiterAlive(loadRecord('w:' .. waiterId)) then reply[3] = reply[3] + 1 end
end
if #holders > 0 or reply[3] > 0 then reply[2] = tonumber(redis.call('HGET', dataKey, 'limit') or '0') end
return reply
