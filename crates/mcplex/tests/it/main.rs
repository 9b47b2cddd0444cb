//! Integration tests: the built `mcplex` binary with real upstream servers and the official
//! Python MCP SDK as the client, in both protocol eras. One binary (matklad's "delete cargo
//! integration tests"); each module is one area of behaviour.

mod activity_export;
mod added_servers;
mod answers;
mod browser;
mod calls;
mod cli;
mod cluster;
mod cluster_rig;
mod code;
mod conformance;
mod connect_sign_in;
mod control_plane;
mod dashboard;
mod dashboard_try;
mod direct_modes;

mod background;
mod faults;
mod hardening_cli;
mod hardening_code;
mod hardening_code_limits;
mod hardening_connect;
mod hardening_http;
mod hardening_login;
mod hardening_redirects;
mod hardening_secrets;
mod hardening_sessions;
mod hardening_slow_bodies;
mod hardening_streams;
mod hardening_upstreams;
mod harness;
mod http;
mod isolation;
mod isolation_commands;
mod isolation_partial;
mod isolation_servers;
mod limits;
mod listing;
mod oauth;
mod oauth_per_user;
mod oauth_resource;
mod oauth_rig;
mod observability;
mod process_ids;
mod processes;
mod projection;
mod protocol;
mod readme;
mod request_path;
mod request_path_sessions;
mod requests;
mod search;
#[cfg(feature = "semantic")]
mod semantic;
mod server_page;
mod server_requests;
mod sign_in;
mod store_postgres;
mod token_exchange;
mod traces;
mod traces_names;
mod trust;
mod upstream_fixtures;
mod upstreams;
