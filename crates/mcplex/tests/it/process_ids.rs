//! Process ids across PID namespaces: a sandboxed server reports its pid inside its own
//! namespace; tests that signal or watch it need the pid this test process sees.

/// The pid, as this test sees it, of a process a server of `gateway_pid` reports as `inner`:
/// a sandboxed server runs in a PID namespace of its own, where its pid is small and names
/// nothing outside. The process descends from the gateway, through a process whose command line
/// names the server (`--name <server>`: the fixture itself, or the sandbox helper running it),
/// and is `inner` in its innermost namespace (`NSpid`). An unconfined process is its own pid.
pub fn host_pid(gateway_pid: u32, server: &str, inner: u64) -> u64 {
    let marker = format!("--name\0{server}\0");
    let field = |pid: u64, name: &str| -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    let names_server = |pid: u64| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
            cmdline
                .windows(marker.len())
                .any(|w| w == marker.as_bytes())
        })
    };
    let qualifies = |pid: u64| -> bool {
        let innermost = field(pid, "NSpid:").and_then(|ns| {
            ns.split_whitespace()
                .last()
                .and_then(|p| p.parse::<u64>().ok())
        });
        if innermost != Some(inner) {
            return false;
        }
        let (mut current, mut named) = (pid, false);
        for _ in 0..64 {
            named |= names_server(current);
            let Some(parent) = field(current, "PPid:").and_then(|p| p.parse::<u64>().ok()) else {
                return false;
            };
            if parent == u64::from(gateway_pid) {
                return named;
            }
            if parent <= 1 {
                return false;
            }
            current = parent;
        }
        false
    };
    let found = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u64>().ok())
        .find(|&pid| qualifies(pid));
    found.unwrap_or_else(|| panic!("no process {inner} of server {server} under {gateway_pid}"))
}
