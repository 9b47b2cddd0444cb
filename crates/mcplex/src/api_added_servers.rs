//! `POST /api/v1/servers` and `DELETE /api/v1/servers/{name}`: servers added from the
//! dashboard while the gateway runs. An entry is read by the config file's own parser
//! (`mcplex_config::parse_added_server`), stored sealed in the control plane, and run by every
//! replica once its follower reads it (`mcplex_runtime::added`), quarantined. The config file
//! stays authoritative: a name it has cannot be added, and only added servers can be removed
//! here. Operators only (the guard lets no viewer change anything).

use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcplex_api::{AddServer, Done, ServerAdded};
use mcplex_config::{ServerOrigin, parse_added_server};

use crate::api::{ApiState, error, off_runtime, store_error};
use crate::api_session::SessionActor;

/// How long an answer waits for this replica to run (or stop) the server it changed.
const APPLIED_WITHIN: Duration = Duration::from_secs(3);

pub async fn add(
    State(state): State<ApiState>,
    actor: Option<Extension<SessionActor>>,
    Json(request): Json<AddServer>,
) -> Response {
    let AddServer {
        name,
        entry,
        check_only,
    } = request;
    let server = match parse_added_server(&name, &entry) {
        Ok(server) => server,
        Err(why) => return error(StatusCode::BAD_REQUEST, why.to_string()),
    };
    if let Some(existing) = state
        .config
        .borrow()
        .servers
        .iter()
        .find(|s| s.name == name)
    {
        let place = match existing.origin {
            ServerOrigin::File => "in the config file",
            ServerOrigin::Added => "added from the dashboard",
        };
        return error(
            StatusCode::CONFLICT,
            format!("a server named {name:?} exists ({place}): choose another name"),
        );
    }
    let config = crate::config_view::server_view(&server);
    let terms = quarantine_terms(&server);
    if check_only {
        let message = format!("{name} is valid. Added, it would start quarantined. {terms}");
        return Json(ServerAdded {
            name,
            config,
            message,
        })
        .into_response();
    }
    let added_by = match actor {
        Some(Extension(SessionActor(Some(person)))) => person,
        _ => "api-key".to_owned(),
    };
    let bytes = entry.to_string().into_bytes();
    let stored_name = name.clone();
    let stored = off_runtime(state.access.store(), move |store| {
        store.add_server(&stored_name, &bytes, Some(&added_by))
    })
    .await;
    match stored {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => {
            return error(
                StatusCode::CONFLICT,
                format!("a server named {name:?} was added meanwhile"),
            );
        }
        Ok(Err(e)) => return store_error(e),
        Err(failed) => return failed,
    }
    let running = applied(&state, &name, true).await;
    let message = if running {
        format!("Added {name}: it starts quarantined on every replica. {terms}")
    } else {
        format!("Added {name}: every replica starts it quarantined as it reads the store. {terms}")
    };
    let answer = ServerAdded {
        name,
        config,
        message,
    };
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// What quarantine means for `server` until an operator approves it: the entry shown beside
/// this is what applies after (its `sandbox`), not before.
fn quarantine_terms(server: &mcplex_config::ServerConfig) -> &'static str {
    match server.transport {
        mcplex_config::Transport::Stdio { .. } => {
            "Until you approve it, its tools, prompts and resources are withheld from agents, and \
             its process has no network and writes only to its temp directory, whatever its \
             sandbox setting says (as far as this machine's kernel can enforce it: its page shows \
             what is in force). A package its command downloads at its first start cannot be \
             fetched before then."
        }
        _ => "Until you approve it, its tools, prompts and resources are withheld from agents.",
    }
}

pub async fn remove(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    let in_file = state
        .config
        .borrow()
        .servers
        .iter()
        .any(|s| s.name == name && s.origin == ServerOrigin::File);
    let removing = name.clone();
    let removed = off_runtime(state.access.store(), move |store| {
        store.remove_added_server(&removing)
    })
    .await;
    match removed {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => {
            return if in_file {
                error(
                    StatusCode::CONFLICT,
                    format!("{name} is in the config file: remove it there"),
                )
            } else {
                error(
                    StatusCode::NOT_FOUND,
                    format!("no server named {name:?} was added from the dashboard"),
                )
            };
        }
        Ok(Err(e)) => return store_error(e),
        Err(failed) => return failed,
    }
    // A stored entry the file shadowed is removed too; it was not running, the file's is.
    let message = if in_file {
        format!("removed the stored entry for {name}; the config file's {name} keeps running")
    } else {
        applied(&state, &name, false).await;
        format!("removed {name}: every replica stops it")
    };
    (StatusCode::OK, Json(Done::new(message))).into_response()
}

/// Waits (at most [`APPLIED_WITHIN`]) until this replica runs `name` (or no longer does): its
/// running config and its published catalog both say so, so that a read right after the
/// answer agrees with it. Whether it got there.
async fn applied(state: &ApiState, name: &str, present: bool) -> bool {
    let mut config = state.config.clone();
    let mut published = state.gateway.snapshot_changes();
    published.mark_unchanged();
    let configured =
        |config: &mcplex_config::Config| config.servers.iter().any(|s| s.name == name) == present;
    let catalogued = || state.gateway.snapshot().servers().contains_key(name) == present;
    let both = async {
        if config.wait_for(|c| configured(c)).await.is_err() {
            return;
        }
        while !catalogued() {
            if published.changed().await.is_err() {
                return;
            }
        }
    };
    tokio::time::timeout(APPLIED_WITHIN, both).await.is_ok() && catalogued()
}
