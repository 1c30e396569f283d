--[[
  Replaces the value a live grant publishes to watchers.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] token
  ARGV[2] value    '' clears it

  Returns
    {1, fence}    set
    {-1}          the token holds nothing
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, value = ARGV[1], ARGV[2]

local grant = liveGrant(token)
if not grant then return { -1 } end
grant.v = value ~= '' and value or nil
saveRecord('g:' .. token, grant)
publishEvent('value', grant.f)
return { 1, grant.f }
