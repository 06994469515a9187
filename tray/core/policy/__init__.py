"""Pure: which session changes become notifications, and when (observe, schedule,
wording, and the policy that ties them)."""
