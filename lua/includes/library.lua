--[[
  The head of the holdfast function library (src/engine/scripts.ts builds it): what every
  lock function shares. The library's text is includes/library, includes/state and
  includes/events, then one redis.register_function per lua/<operation>-<keys>.lua, whose body
  is that file. Each function sets these for its own call (includes/begin, then its keys).
]]
local holdersKey, queueKey, dataKey, channel, now, nowUs
