//! Issue 15, the code surface: runaway native calls stopped at their deadline, nothing of a run
//! outliving it, fair slots per caller, tool error bodies carried into script errors.
