--[[
  Ends a waiter's wait to break a deadlock, if it still waits: its record says aborted (with the
  message its call is answered with), it leaves the queue, the queue is served (it may have
  blocked the waiters behind it), and one message on the lock's channel names it, as for a grant,
  so that its server runs claim-4 for it and answers it. A second message ('x <message>') tells
  the lock's watchers (src/engine/watch-room.ts); wait rooms ignore it.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] waiter id
  ARGV[2] message      what the waiter's call is answered with (names the cycle)

  Returns 1 when the wait was ended, 0 when it was no longer waiting (granted, gone, ended)
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waiterId, message = ARGV[1], ARGV[2]

local waiter = loadRecord('w:' .. waiterId)
if not (waiterAlive(waiter) and waiter.g == 0 and redis.call('ZSCORE', queueKey, waiterId)) then return 0 end
waiter.g, waiter.d = 3, message
saveRecord('w:' .. waiterId, waiter)
redis.call('ZREM', queueKey, waiterId)
redis.call('SPUBLISH', channel, 'g ' .. waiterId)
redis.call('SPUBLISH', channel, 'x ' .. message)
settle()
keepKeys()
return 1
