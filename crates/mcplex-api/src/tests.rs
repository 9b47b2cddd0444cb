//! The exact bytes of every body, as the gateway sent them when they were built with `json!`:
//! each test serializes a typed value, compares the text, and reads it back.

use mcplex_protocol::ServerHealth;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::*;

/// `value` serializes to exactly `wire`, and `wire` reads back as `value`.
#[track_caller]
fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T, wire: &str) {
    let text = serde_json::to_string(value).expect("serializes");
    assert_eq!(text, wire);
    let back: T = serde_json::from_str(wire).expect("reads back");
    assert_eq!(&back, value);
}

#[test]
fn a_server_row_from_a_gateway_carries_its_tool_counts() {
    let answer = ServersAnswer {
        servers: vec![Server {
            name: "github".into(),
            state: ServerState::Quarantined,
            status: ServerStatus::Health(ServerHealth::Unhealthy {
                reason: "exited: 1".into(),
            }),
            tools: Some(3),
            withheld: Some(1),
            isolation: Some(Isolation {
                level: IsolationLevel::Partial,
                quarantine: true,
                network: false,
                mechanisms: vec!["landlock (ABI 7)".into()],
                missing: vec!["namespaces (EPERM)".into()],
                summary: "partial: landlock (ABI 7)".into(),
                denied: Some("EACCES: permission denied, open '/srv/x'".into()),
            }),
            failures: Some(RecentFailures {
                recent: 3,
                last: Some("exited: 1".into()),
            }),
            connected: Some(vec![ConnectedCaller {
                caller: "agent-a".into(),
                updated_at: 1_700_000_000,
            }]),
        }],
    };
    check(
        &answer,
        r#"{"servers":[{"name":"github","state":"quarantined","status":"unhealthy: exited: 1","tools":3,"withheld":1,"isolation":{"level":"partial","quarantine":true,"network":false,"mechanisms":["landlock (ABI 7)"],"missing":["namespaces (EPERM)"],"summary":"partial: landlock (ABI 7)","denied":"EACCES: permission denied, open '/srv/x'"},"failures":{"recent":3,"last":"exited: 1"},"connected":[{"caller":"agent-a","updated_at":1700000000}]}]}"#,
    );
    // Unhealthy is not a crash loop (it is not up); ready with as many failures is.
    assert!(!answer.servers[0].crash_looping());
    let up = Server {
        status: ServerStatus::Health(ServerHealth::Ready),
        ..answer.servers[0].clone()
    };
    assert!(up.crash_looping());
}

#[test]
fn a_server_row_from_the_store_has_no_tool_counts() {
    let row = Server {
        name: "time".into(),
        state: ServerState::Approved,
        status: ServerStatus::NotReachable,
        tools: None,
        withheld: None,
        isolation: None,
        failures: None,
        connected: None,
    };
    check(
        &row,
        r#"{"name":"time","state":"approved","status":"running (not reachable)"}"#,
    );
}

#[test]
fn every_server_status_reads_back_from_its_text() {
    for status in [
        ServerStatus::Health(ServerHealth::Disabled),
        ServerStatus::Health(ServerHealth::Connecting),
        ServerStatus::Health(ServerHealth::Ready),
        ServerStatus::Health(ServerHealth::Unhealthy {
            reason: "connection refused".into(),
        }),
        ServerStatus::NotRunning,
        ServerStatus::NotReachable,
        ServerStatus::Health(ServerHealth::NeedsLogin {
            reason: "not logged in: run `mcplex auth login s`".into(),
        }),
    ] {
        assert_eq!(ServerStatus::parse(&status.to_string()), Some(status));
    }
    assert_eq!(ServerStatus::parse("sleeping"), None);
    assert!(serde_json::from_str::<ServerStatus>(r#""sleeping""#).is_err());
}

#[test]
fn served_and_withheld_tools_keep_their_own_fields_in_order() {
    let answer = ToolsAnswer {
        tools: vec![
            Tool::Served(ServedTool {
                id: "a:echo".into(),
                name: "a__echo".into(),
                status: ToolStatus::Approved,
                permission: Permission::Read,
                pin: "sha256:1".into(),
                deferred: false,
                description: Some("Echoes.".into()),
            }),
            Tool::Withheld(WithheldTool {
                id: "b:rm".into(),
                status: ToolStatus::Changed,
                reason: WithheldReason::ToolChanged,
                permission: Permission::Destructive,
                pin: "sha256:2".into(),
                description: serde_json::Value::Null,
            }),
        ],
    };
    check(
        &answer,
        concat!(
            r#"{"tools":[{"id":"a:echo","name":"a__echo","status":"approved","permission":"read","pin":"sha256:1","deferred":false,"description":"Echoes."},"#,
            r#"{"id":"b:rm","status":"changed","reason":"tool_changed","permission":"destructive","pin":"sha256:2","description":null}]}"#
        ),
    );
    assert_eq!(answer.tools[1].id(), "b:rm");
}

#[test]
fn approvals_name_quarantined_servers_and_withheld_tools() {
    let answer = ApprovalsAnswer {
        servers: vec!["new".into()],
        tools: vec![WithheldTool {
            id: "new:t".into(),
            status: ToolStatus::Pending,
            reason: WithheldReason::ServerQuarantined,
            permission: Permission::Write,
            pin: "p".into(),
            description: json!("Writes."),
        }],
    };
    check(
        &answer,
        r#"{"servers":["new"],"tools":[{"id":"new:t","status":"pending","reason":"server_quarantined","permission":"write","pin":"p","description":"Writes."}]}"#,
    );
}

#[test]
fn a_created_token_is_the_token_row_then_its_secret() {
    let created = CreatedToken {
        record: Token {
            name: "ci".into(),
            servers: None,
            permissions: "read,write".into(),
            profile: None,
            created_at: 1_700_000_000,
            expires_at: Some(1_800_000_000),
            status: TokenStatus::Active,
            limits: Some(json!({"calls_per_minute": 60})),
            usage: None,
        },
        token: "mcplex_secret".into(),
    };
    check(
        &created,
        r#"{"name":"ci","servers":null,"permissions":"read,write","profile":null,"created_at":1700000000,"expires_at":1800000000,"status":"active","limits":{"calls_per_minute":60},"usage":null,"token":"mcplex_secret"}"#,
    );
    let listed = TokensAnswer {
        tokens: vec![Token {
            servers: Some(vec!["a".into()]),
            profile: Some("p".into()),
            expires_at: None,
            status: TokenStatus::Revoked,
            limits: None,
            usage: Some(CallerUsage {
                caller: "ci".into(),
                limits: json!({"calls_per_minute": 60}),
                calls_last_minute: 7,
                in_flight: 1,
                refused_last_minute: 2,
            }),
            ..created.record
        }],
    };
    check(
        &listed,
        r#"{"tokens":[{"name":"ci","servers":["a"],"permissions":"read,write","profile":"p","created_at":1700000000,"expires_at":null,"status":"revoked","limits":null,"usage":{"caller":"ci","limits":{"calls_per_minute":60},"calls_last_minute":7,"in_flight":1,"refused_last_minute":2}}]}"#,
    );
}

#[test]
fn a_token_request_refuses_unknown_fields_and_defaults_the_optional_ones() {
    let request: CreateToken =
        serde_json::from_str(r#"{"name":"n","permissions":"read"}"#).expect("minimal request");
    assert_eq!(request.servers, None);
    assert_eq!(request.expires, None);
    assert!(
        serde_json::from_str::<CreateToken>(r#"{"name":"n","permissions":"read","admin":true}"#)
            .is_err()
    );
}

#[test]
fn done_and_error_answers() {
    check(
        &Done::new("server x approved"),
        r#"{"ok":true,"message":"server x approved"}"#,
    );
    check(&ErrorAnswer { error: "no".into() }, r#"{"error":"no"}"#);
}

#[test]
fn search_status_names_its_ranking_and_only_the_reason_that_applies() {
    check(
        &SearchStatus {
            ranking: Ranking::Hybrid,
            model: Some("m".into()),
            instructions: Some("avx2".into()),
            without_model: None,
            embedding_failed: None,
        },
        r#"{"ranking":"hybrid","model":"m","instructions":"avx2"}"#,
    );
    check(
        &SearchStatus {
            ranking: Ranking::Bm25,
            model: None,
            instructions: None,
            without_model: Some(WithoutModel {
                because: NoModel::Failed,
                message: "gone".into(),
            }),
            embedding_failed: None,
        },
        r#"{"ranking":"bm25","without_model":{"because":"failed","message":"gone"}}"#,
    );
    check(
        &SearchStatus {
            ranking: Ranking::Bm25,
            model: Some("m".into()),
            instructions: None,
            without_model: None,
            embedding_failed: Some("broken".into()),
        },
        r#"{"ranking":"bm25","model":"m","embedding_failed":"broken"}"#,
    );
    for (because, wire) in [
        (NoModel::Config, r#""config""#),
        (NoModel::Build, r#""build""#),
        (NoModel::Failed, r#""failed""#),
    ] {
        check(&because, wire);
    }
}

#[test]
fn a_review_names_its_state_in_words() {
    let review = ToolReview {
        id: "a:t".into(),
        state: ReviewState::Changed,
        blocked: false,
        pinned: Some(Definition {
            hash: "h1".into(),
            definition: serde_json::Value::Null,
        }),
        observed: None,
    };
    check(
        &review,
        r#"{"id":"a:t","state":"changed: the observed definition is not the approved one","blocked":false,"pinned":{"hash":"h1","definition":null},"observed":null}"#,
    );
}

#[test]
fn paths_encode_what_would_break_a_route() {
    assert_eq!(
        paths::server_action("my server", ServerAction::Quarantine),
        "/api/v1/servers/my%20server/quarantine"
    );
    assert_eq!(
        paths::tool_action("a:b/c", ToolAction::Approve, Some("sha256:f+")),
        "/api/v1/tools/a:b%2Fc/approve?hash=sha256:f%2B"
    );
    assert_eq!(paths::token("ci"), "/api/v1/tokens/ci");
    assert_eq!(ServerAction::parse("approve"), Some(ServerAction::Approve));
    assert_eq!(ToolAction::parse("quarantine"), None);
}

#[test]
fn the_pasted_api_key_never_shows_in_debug() {
    let login = crate::LoginRequest {
        key: "mcplex_admin_0123456789".to_owned(),
    };
    let debug = format!("{login:?}");
    assert!(!debug.contains("0123456789"), "{debug}");
}
