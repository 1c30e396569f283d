--[[
  Called by a server for the waiters it has queued on one lock: brings the lock up to date
  (expired holders out, fitting waiters served), keeps the queue entries alive, and confirms
  the full lease of each waiter the queue has served.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] entry lease ms
  ARGV[2..] waiter ids

  Returns {msToNextExpiry, {result per waiter id, in order}} where a result is
    {1, token, fence, ttl, holdCount}   granted: the full lease now runs
    {2}                                 still queued (entry refreshed)
    {-1}                                gone: the entry expired or its grant was lost
    {-4}                                refused: the owner holds the lock shared and asked for exclusive
    {-7, message}                       aborted to break a deadlock (abort-wait-4): the message names the cycle
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local entryLease = tonumber(ARGV[1])

settle()

local results = {}
for i = 2, #ARGV do
  local waiterId = ARGV[i]
  local waiter = loadRecord('w:' .. waiterId)
  local result = { -1 }
  if waiter and waiter.g == 0 then
    waiter.e = now + entryLease
    saveRecord('w:' .. waiterId, waiter)
    result = { 2 }
  elseif waiter then
    redis.call('HDEL', dataKey, 'w:' .. waiterId)
    local grant = liveGrant(waiter.k)
    if waiter.g == 2 then
      result = { -4 }
    elseif waiter.g == 3 then
      result = { -7, waiter.d }
    elseif grant then
      if now + waiter.t > leaseExpiry(waiter.k) then redis.call('ZADD', holdersKey, now + waiter.t, waiter.k) end
      result = { 1, waiter.k, grant.f, waiter.t, holdCount(grant) }
    end
  end
  results[#results + 1] = result
end
keepKeys()
return { msToNextExpiry(), results }
