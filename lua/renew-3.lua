--[[
  Renews a live grant's lease to now + ttl (includes/renew: the rules, shared with renew-batch-3).
  It never shortens a lease: a client (or another hold of the same grant) may be counting on the
  current expiry.

  KEYS[1] holders    KEYS[2] queue    KEYS[3] data (see includes/state)

  ARGV[1] token
  ARGV[2] ttl ms     0 keeps the grant's lease length
  ARGV[3] hold id    a Hold stream renewing its own hold; '' otherwise
  ARGV[4] with fence '1': a renewed reply also carries the grant's fencing token (for its signed fence)

  Returns
    {1, leaseLeft}   renewed: the lease now ends leaseLeft ms from now (at least ttl)
    {1, leaseLeft, fence}   the same, with ARGV[4] '1': fence is the grant's fencing token
    {-1, why}        nothing renewed: why is 1 when someone else holds the lock now, 2 when the
                     grant lives but this hold was given back (Release), 0 when it expired or was released
]]
--- @include "includes/begin"
holdersKey, queueKey, dataKey = KEYS[1], KEYS[2], KEYS[3]
local code, value, fence = renewLease(ARGV[1], tonumber(ARGV[2]), ARGV[3] or '')
if ARGV[4] == '1' and code == 1 then return { code, value, fence } end
return { code, value }
