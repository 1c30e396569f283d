--[[
  Ties a request id to the one request it was first used for, whatever lock that names: the
  lock's own record of it lives in that lock's slot, so reuse on another lock is caught here.

  KEYS[1] request id key (its own slot, see src/engine/keys.ts)

  ARGV[1] what was asked: name, owner, mode, limit and lease, encoded by the engine
  ARGV[2] ms to remember it after this use

  Returns 1 when the id is new or was used for exactly this request, 0 when it was used for another.
]]
local key, asked, rememberMs = KEYS[1], ARGV[1], tonumber(ARGV[2])

local prior = redis.call('GET', key)
if prior and prior ~= asked then return 0 end
redis.call('SET', key, asked, 'PX', rememberMs)
return 1
