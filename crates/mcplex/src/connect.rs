//! A caller's own login to a `per_user` upstream, from the link its refused call carried.
//! The link is `<public URL>/ui/connect/<payload>.<mac>`: the server, the caller and when the
//! link ends (an hour), keyed-hashed under the store's installation secret, so every replica
//! of the store accepts it and nothing is written when a call is refused. Following it begins
//! that caller's login (`upstream_login::begin_login`) and sends the browser to the
//! authorization server; its answer comes back to the dashboard's callback, which stores the
//! login as that caller's, and the caller's next call goes out with it.
//!
//! What proves the person following the link is the caller: the link itself, which only the
//! caller received (in its own call's result), signed for that caller and server. Whoever
//! completes the login ties their upstream account to that caller alone; the link never
//! grants access to anyone else's login.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcplex_config::Config;
use mcplex_state::Store;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::ui::text_page as page;

/// Where a link points, beneath the public URL.
pub const CONNECT_PATH: &str = "/ui/connect";
/// How long a link may be followed.
const LINK_LIFETIME_SECS: i64 = 3600;
/// What the mac covers besides the payload, so that it can stand for nothing else.
const PURPOSE: &str = "mcplex-connect";

/// What a link says.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Link {
    #[serde(rename = "s")]
    server: String,
    #[serde(rename = "c")]
    caller: String,
    /// Unix seconds.
    #[serde(rename = "e")]
    ends_at: i64,
}

/// The public URL links and callbacks are made under: the origin of `auth.resource` when it is
/// set, else the address the gateway listens on (an unspecified one named `localhost`).
pub fn public_origin(config: &Config) -> String {
    if let Some(origin) = config
        .auth
        .as_ref()
        .and_then(|auth| auth.resource.as_deref())
        .and_then(|resource| url::Url::parse(resource).ok())
        .map(|url| url.origin().ascii_serialization())
        .filter(|origin| origin != "null")
    {
        return origin;
    }
    let listen = config
        .listen
        .replace("0.0.0.0", "localhost")
        .replace("[::]", "localhost");
    format!("http://{listen}")
}

/// The link maker the gateway's logins hand out with a refused call.
pub fn links(store: Arc<Store>, origin: String) -> mcplex_oauth::ConnectLinks {
    Box::new(move |server, caller| {
        let link = Link {
            server: server.to_owned(),
            caller: caller.to_owned(),
            ends_at: mcplex_oauth::now_unix().saturating_add(LINK_LIFETIME_SECS),
        };
        Some(format!("{origin}{CONNECT_PATH}/{}", sign(&store, &link)?))
    })
}

fn sign(store: &Store, link: &Link) -> Option<String> {
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(link).ok()?);
    let mac = store.token_mac(&format!("{PURPOSE}\n{payload}"));
    Some(format!("{payload}.{mac}"))
}

/// The link `text` names, when this store signed it and it has not ended at `now`.
fn verify(store: &Store, text: &str, now: i64) -> Option<Link> {
    let (payload, mac) = text.split_once('.')?;
    let expected = store.token_mac(&format!("{PURPOSE}\n{payload}"));
    if !mcplex_surface::same_secret(mac, &expected) {
        return None;
    }
    let link: Link = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    (link.ends_at > now).then_some(link)
}

#[derive(Clone)]
struct Connect {
    store: Arc<Store>,
    config: watch::Receiver<Arc<Config>>,
}

/// `GET /ui/connect/{link}`, open like every `/ui` page: the signed link is the proof.
pub fn router(store: Arc<Store>, config: watch::Receiver<Arc<Config>>) -> Router {
    Router::new()
        .route(&format!("{CONNECT_PATH}/{{link}}"), get(follow))
        .with_state(Connect { store, config })
}

async fn follow(State(connect): State<Connect>, Path(text): Path<String>) -> Response {
    if text.len() > 4096 {
        return page(
            StatusCode::BAD_REQUEST,
            "This link is not one of this gateway's.",
        );
    }
    let Some(link) = verify(&connect.store, &text, mcplex_oauth::now_unix()) else {
        return page(
            StatusCode::BAD_REQUEST,
            "This link is not one of this gateway's, or it ended (a link lasts an hour): call the tool again for a new one.",
        );
    };
    let config = connect.config.borrow().clone();
    let Some(server) = config
        .servers
        .iter()
        .find(|s| s.name == link.server && s.oauth.as_ref().is_some_and(|o| o.per_user))
    else {
        return page(
            StatusCode::NOT_FOUND,
            &format!(
                "{} no longer asks each caller for its own login.",
                link.server
            ),
        );
    };
    let origin = public_origin(&config);
    match crate::upstream_login::begin_login(&connect.store, server, &origin, Some(&link.caller))
        .await
    {
        Ok(url) => {
            tracing::info!(server = %link.server, caller = %link.caller, "a caller's login to its own account begins");
            Redirect::to(&url).into_response()
        }
        Err((status, why)) => page(
            status,
            &format!(
                "The login to {} could not begin: {}",
                link.server,
                crate::ui::short(&why)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_opens_only_as_signed_and_only_until_it_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = Store::open(dir.path()).expect("store");
        let link = Link {
            server: "github".into(),
            caller: "agent-a".into(),
            ends_at: 1_000,
        };
        let text = sign(&store, &link).expect("signed");
        assert_eq!(verify(&store, &text, 999), Some(link));
        assert_eq!(verify(&store, &text, 1_000), None, "ended");
        // Another caller's name in the same mac's payload does not open.
        let (_, mac) = text.split_once('.').expect("two parts");
        let forged = Link {
            server: "github".into(),
            caller: "agent-b".into(),
            ends_at: 1_000,
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).expect("json"));
        assert_eq!(verify(&store, &format!("{payload}.{mac}"), 0), None);
        // Another store's link does not open either.
        let other = tempfile::tempdir().expect("tempdir");
        let (other, _) = Store::open(other.path()).expect("store");
        assert_eq!(verify(&other, &text, 0), None);
    }
}
