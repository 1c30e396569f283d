--[[
  Tells watchers that a holder changed; part of the library, after includes/state.
  One SPUBLISH on the lock's channel, the one wake-ups use: a server that
  watches the lock reads its state once per burst of these (src/engine/watch-room.ts);
  wait rooms ignore them. Never carries a token: `what` is granted, released, value or
  lost:<why>, and the fence names the holder.
]]
local function publishEvent(what, fence)
  if channel then redis.call('SPUBLISH', channel, 'e ' .. what .. ' ' .. fence) end
end
