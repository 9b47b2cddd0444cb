//! The plan of one start, for every kind of kernel and configuration.

use super::*;

fn support(namespaces: bool, landlock_abi: i32) -> Support {
    Support {
        landlock_abi,
        namespaces: if namespaces {
            Ok(())
        } else {
            Err(crate::NamespacesError::Refused(
                "unshare: Operation not permitted".to_owned(),
            ))
        },
    }
}

fn policy<'a>(sandbox: &'a Sandbox, quarantined: bool, temp: &'a Path) -> Policy<'a> {
    Policy {
        sandbox,
        quarantined,
        command: "/bin/sh",
        args: &[],
        working_dir: Some(Path::new("/srv/work")),
        home: Some(Path::new("/home/me")),
        cache_home: None,
        temp_dir: temp,
    }
}

#[test]
fn the_default_reads_everything_but_the_secrets_and_writes_its_own_places() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let secret = scratch.path().join("data");
    std::fs::create_dir(&secret).expect("mkdir");
    let protected = Protected::new([secret.clone(), scratch.path().join("missing")]);
    let sandbox = Sandbox::default();
    let temp = scratch.path().join("temp");
    let (plan, report) = plan(
        &policy(&sandbox, false, &temp),
        &protected,
        &support(true, 7),
    )
    .expect("plan");
    let plan = plan.expect("a plan");
    assert_eq!(report.level, Level::Full);
    assert!(report.network && !report.quarantine);
    assert_eq!(plan.read, [PathBuf::from("/")]);
    assert_eq!(
        plan.hidden,
        [secret.canonicalize().expect("canonical")],
        "only existing secrets, canonical"
    );
    for writable in ["/srv/work", "/home/me/.npm", "/home/me/.cache"] {
        assert!(plan.write.contains(&PathBuf::from(writable)), "{writable}");
    }
    assert_eq!(plan.private, [temp, PathBuf::from(SHARED_MEMORY)]);
    assert!(plan.private_tmpfs_bytes.is_some());
    assert_eq!(plan.limits.memory_bytes, 4096 << 20);
}

#[test]
fn a_quarantined_server_has_no_network_and_writes_only_its_temp_directory() {
    let sandbox = Sandbox {
        write: vec![PathBuf::from("/srv/data")],
        ..Sandbox::default()
    };
    let temp = PathBuf::from("/tmp/x/server.1");
    let (plan, report) = plan(
        &policy(&sandbox, true, &temp),
        &Protected::default(),
        &support(true, 7),
    )
    .expect("plan");
    let plan = plan.expect("a plan");
    assert!(!plan.network && !report.network && report.quarantine);
    assert!(plan.write.is_empty(), "{:?}", plan.write);
    assert!(plan.create.is_empty());
    assert_eq!(plan.private, [temp, PathBuf::from(SHARED_MEMORY)]);
    assert!(report.mechanisms.iter().any(|m| m == "network namespace"));
}

#[test]
fn without_namespaces_it_is_partial_and_required_refuses_it() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let temp = scratch.path().join("server.1");
    let sandbox = Sandbox {
        network: false,
        ..Sandbox::default()
    };
    let (plan, report) = plan(
        &policy(&sandbox, false, &temp),
        &Protected::default(),
        &support(false, 7),
    )
    .expect("plan");
    let plan = plan.expect("a plan");
    assert_eq!(report.level, Level::Partial);
    assert!(!plan.namespaces && plan.private_tmpfs_bytes.is_none());
    // The others' temp directories are hidden when they are plain directories.
    assert_eq!(
        plan.hidden,
        [scratch.path().canonicalize().expect("canonical")]
    );
    assert!(
        report
            .missing
            .iter()
            .any(|m| m.contains("Operation not permitted"))
    );
    assert!(
        report
            .mechanisms
            .iter()
            .any(|m| m == "TCP refused by Landlock")
    );
    let required = Sandbox {
        required: true,
        ..sandbox
    };
    let refused = plan_of(&required, &support(false, 7));
    assert!(
        refused.is_err_and(|r| r.0.contains("required")),
        "a required sandbox the kernel cannot give is refused"
    );
    assert!(plan_of(&required, &support(true, 7)).is_ok());
}

#[test]
fn a_quarantined_server_is_not_started_where_the_kernel_cannot_hold_it() {
    let temp = PathBuf::from("/tmp/x/server.1");
    let quarantined = |support: &Support| {
        plan(
            &policy(&Sandbox::default(), true, &temp),
            &Protected::default(),
            support,
        )
    };
    for (namespaces, abi) in [(true, 0), (false, 0), (false, 3), (false, 7)] {
        let refused = quarantined(&support(namespaces, abi));
        assert!(
            refused
                .as_ref()
                .is_err_and(|r| r.0.contains("not started while quarantined")),
            "namespaces {namespaces}, Landlock ABI {abi}: {refused:?}"
        );
    }
    // Landlock's TCP rules do not stand in for the network namespace (UDP, Unix sockets).
    assert!(quarantined(&support(true, 1)).is_ok());
    // Once approved, the same kernel starts it as its config says.
    assert!(plan_of(&Sandbox::default(), &support(false, 0)).is_ok());
}

#[test]
fn no_server_may_open_a_terminal() {
    let (plan, _) = plan_of(&Sandbox::default(), &support(true, 7)).expect("plan");
    let devices = plan.expect("a plan").devices;
    assert!(!devices.contains(&PathBuf::from("/dev/tty")), "{devices:?}");
}

#[test]
fn sandbox_false_runs_unconfined_and_says_so() {
    let sandbox = Sandbox {
        enabled: false,
        ..Sandbox::default()
    };
    let (plan, report) = plan_of(&sandbox, &support(true, 7)).expect("plan");
    assert!(plan.is_none());
    assert_eq!(report.level, Level::Off);
    let (_, nothing) = plan_of(&Sandbox::default(), &support(false, 0)).expect("plan");
    assert_eq!(nothing.level, Level::Off, "no mechanism at all");
    // Until it is approved, the opt-out does not apply: quarantine confines it.
    let temp = PathBuf::from("/tmp/x/server.1");
    let (confined, report) = super::plan(
        &policy(&sandbox, true, &temp),
        &Protected::default(),
        &support(true, 7),
    )
    .expect("plan");
    let confined = confined.expect("a quarantined server is confined even with \"sandbox\": false");
    assert_eq!(report.level, Level::Full);
    assert!(!confined.network && report.quarantine && confined.write.is_empty());
}

#[test]
fn narrowed_reads_keep_the_system_the_command_and_its_arguments() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let given = scratch.path().join("repo");
    std::fs::create_dir(&given).expect("mkdir");
    let sandbox = Sandbox {
        read: Some(vec![PathBuf::from("/nonexistent-but-listed")]),
        ..Sandbox::default()
    };
    let args = [given.display().to_string(), "--flag".to_owned()];
    let temp = scratch.path().join("temp");
    let policy = Policy {
        args: &args,
        ..policy(&sandbox, false, &temp)
    };
    let (plan, _) = plan(&policy, &Protected::default(), &support(true, 7)).expect("plan");
    let read = plan.expect("a plan").read;
    assert!(read.contains(&given), "{read:?}");
    assert!(read.contains(&PathBuf::from("/usr")), "{read:?}");
    assert!(!read.contains(&PathBuf::from("/nonexistent-but-listed")));
}

fn plan_of(sandbox: &Sandbox, support: &Support) -> Result<(Option<Plan>, Report), Refused> {
    let temp = PathBuf::from("/tmp/base/server.1");
    plan(
        &policy(sandbox, false, &temp),
        &Protected::default(),
        support,
    )
}

#[test]
fn the_gateways_open_port_is_closed_to_a_server_with_network_only() {
    let protected = Protected::default().closing([8080, 8080, 9090]);
    let temp = PathBuf::from("/tmp/x/server.1");
    let planned = |sandbox: &Sandbox, quarantined: bool, support: &Support| {
        plan(&policy(sandbox, quarantined, &temp), &protected, support).expect("plan")
    };
    let (networked, report) = planned(&Sandbox::default(), false, &support(true, 7));
    assert_eq!(networked.expect("a plan").closed_ports, [8080, 9090]);
    assert!(
        report
            .mechanisms
            .iter()
            .any(|m| m.contains("without a credential (8080, 9090) refused by Landlock")),
        "{report:?}"
    );
    // No network at all: nothing to close.
    let offline = Sandbox {
        network: false,
        ..Sandbox::default()
    };
    let (plan, _) = planned(&offline, false, &support(true, 7));
    assert!(plan.expect("a plan").closed_ports.is_empty());
    let (plan, _) = planned(&Sandbox::default(), true, &support(true, 7));
    assert!(plan.expect("a plan").closed_ports.is_empty(), "quarantined");
    // Before Landlock's TCP rules nothing can close it, and the operator is told how to.
    let (_, report) = planned(&Sandbox::default(), false, &support(true, 3));
    assert_eq!(report.level, Level::Partial);
    assert!(
        report.missing.iter().any(|m| m.contains("require_auth")),
        "{report:?}"
    );
}
