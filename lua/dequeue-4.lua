--[[
  Takes a waiter out of the queue (its call ended). If the queue had already served it, the
  hold it was given is dropped, so a cancelled waiter never leaves a grant behind.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data    KEYS[4] channel (see includes/state)

  ARGV[1] waiter id

  Returns 1 when a served grant was dropped, 0 otherwise.
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local waiterId = ARGV[1]

local waiter = loadRecord('w:' .. waiterId)
local dropped = 0
if waiter then
  dropWaiter(waiterId)
  local grant = waiter.g == 1 and liveGrant(waiter.k)
  local holdId = waiter.h or ''
  -- Its hold may already be gone (a Release by token takes an unnamed hold first): then there is
  -- nothing of its own to give back, and another holder's hold must not go in its place.
  local own = false
  if grant and holdId ~= '' then
    own = findHold(grant, holdId) ~= nil
  elseif grant then
    own = unnamedHolds(grant, EXCLUSIVE) + unnamedHolds(grant, SHARED) > 0
  end
  if own then
    dropHold(waiter.k, grant, holdId, waiter.m)
    publishEvent('released', grant.f)
    dropped = 1
  end
end
settle()
keepKeys()
return dropped
