--[[
  The start of every lock function. Pasted by `--- @include "includes/begin"` right before the
  function names its keys. The functions share one library (includes/library), so the helpers
  of includes/state are made once when Redis loads it, not on every call; what they read of
  the call lives in library-level variables, set here afresh: Redis runs one function at a time.
  now (ms) and nowUs (µs) are Redis server time, the only clock lock functions use; both stay
  exact in Lua's doubles (< 2^53).
]]
local clock = redis.call('TIME')
now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
nowUs = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
holdersKey, queueKey, dataKey, channel = nil, nil, nil, nil
servedUntil, handOffPrefix, handedOff, settledFirst, settledEmpty = 0, nil, {}, nil, nil
