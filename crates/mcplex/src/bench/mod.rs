//! `mcplex bench …`: measurements that print a table and write JSON. Comparisons run side by
//! side in one process and one run, so the ratio is meaningful on a noisy 2-core machine.

pub mod overhead;
mod stats;
