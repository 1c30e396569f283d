--[[
  An owner's live wait records: what a deadlock walk follows out of the owner. Records past their
  end (their server died before it removed them) are dropped.

  KEYS[1] waits        the owner's wait records (see note-wait-1)

  Returns {{waiter id, lock name, since ms}...}
]]
--- @include "includes/begin"
local waitsKey = KEYS[1]

local reply = {}
local fields = redis.call('HGETALL', waitsKey)
for i = 1, #fields, 2 do
  local record = cjson.decode(fields[i + 1])
  if record.u <= now then
    redis.call('HDEL', waitsKey, fields[i])
  else
    reply[#reply + 1] = { fields[i], record.n, record.s }
  end
end
return reply
