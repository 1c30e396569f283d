--[[
  Records that an owner waits for a lock (deadlock detection, src/engine/deadlocks.ts): one field
  of the owner's wait records, written when a wait reaches the deadlock timeout. An index only:
  every edge a walk follows is checked again on the lock's own slot (wait-edge-3).

  KEYS[1] waits        the owner's wait records (hash: waiter id -> {n lock name, s since ms, u until ms})

  ARGV[1] waiter id
  ARGV[2] lock name
  ARGV[3] waited ms    how long the wait has lasted (its start is now minus this, on this clock)
  ARGV[4] keep ms      how long the record may be needed (the wait's deadline plus its entry lease)

  Returns since: when the wait began (ms, Redis TIME of this slot's node)
]]
--- @include "includes/begin"
local waitsKey = KEYS[1]
local waiterId, lockName = ARGV[1], ARGV[2]
local waited, keep = tonumber(ARGV[3]), tonumber(ARGV[4])

local since = now - waited
redis.call('HSET', waitsKey, waiterId, cjson.encode({ n = lockName, s = since, u = now + keep }))
if redis.call('PTTL', waitsKey) < keep then redis.call('PEXPIRE', waitsKey, keep) end
return since
