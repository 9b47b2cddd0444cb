//! Issue 14, the control plane: the store is the truth, and every running gateway follows it.
