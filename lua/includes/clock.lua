--[[
  Redis server time, the only clock lock scripts use. Pasted by `--- @include "includes/clock"`.
  Defines now (ms) and nowUs (µs); both stay exact in Lua's doubles (< 2^53).
]]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local nowUs = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
