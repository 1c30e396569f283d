--[[
  Removes an owner's wait record (the wait was granted, ended or aborted).

  KEYS[1] waits        the owner's wait records (see note-wait-1)

  ARGV[1] waiter id

  Returns 1 when there was one, 0 otherwise
]]
local waitsKey = KEYS[1]
return redis.call('HDEL', waitsKey, ARGV[1])
