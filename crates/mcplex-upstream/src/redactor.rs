//! The redactor of one server: what must never show of it in any text (its configured secrets,
//! an OAuth client secret named by variable, what it inherits on purpose), built once per
//! server slot and shared by its wire, its connection and its errors.

use mcplex_config::{Redactor, ServerConfig};

/// The server's redactor, hiding an OAuth client secret its config names by variable too, and
/// what a stdio server inherits beyond the allow-list (`inherit_env`).
pub(crate) fn redactor_of(server: &ServerConfig) -> Redactor {
    let from_env = server
        .oauth
        .as_ref()
        .and_then(|o| mcplex_oauth::configured_secret(o).ok().flatten())
        .map(|secret| secret.expose().to_owned());
    let inherited = match &server.transport {
        mcplex_config::Transport::Stdio { inherit_env, .. } => {
            crate::wire::environment::passed_values(std::env::vars_os(), inherit_env)
        }
        _ => Vec::new(),
    };
    Redactor::for_server(server).with(from_env.into_iter().chain(inherited))
}
