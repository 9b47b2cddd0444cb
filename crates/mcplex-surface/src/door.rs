//! The HTTP listener's front door: every request passes the [`Guard`] here (the edge checks, then
//! its route family's guard or the MCP routes' admission), and a [`Door`] is the only thing
//! [`crate::serve_http`] serves, so no route is reachable without it.
//!
//! A POST to an MCP route's exact path (`/mcp`, `/mcp/all`, `/mcp/call`, `/mcp/code`,
//! `/mcp/p/<profile>`) goes from [`Guard::admit`] straight to that route's [`Route`]: it is the
//! tool call's path, and axum's router (the path match, the copy of the URI its nesting makes,
//! the boxed services of a middleware) cost as much as the guard's checks themselves. Every
//! other request goes through the router, with the guard as its outermost layer. The two run
//! the same checks in the same order; only the dispatch after them differs.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use axum::response::Response;

use crate::access::{Guard, guard};
use crate::route::{Route, Surface};

/// What a route's POST handler returns.
type Answer = Pin<Box<dyn Future<Output = Response> + Send>>;
/// One MCP route's POST handler.
type Lane = Arc<dyn Fn(Request<Body>) -> Answer + Send + Sync>;

/// The MCP routes' POST handlers, by the exact path each is served at.
#[derive(Clone, Default)]
pub struct Lanes(HashMap<String, Lane>);

impl Lanes {
    pub(crate) fn add<S: Surface>(&mut self, path: &str, route: Route<S>) {
        let lane: Lane = Arc::new(move |request| Box::pin(route.clone().serve(request)));
        self.0.insert(path.to_owned(), lane);
    }
}

/// The app behind the guard. Cheap to clone (one per connection).
#[derive(Clone)]
pub struct Door(Arc<Inner>);

struct Inner {
    /// The whole app, the guard its outermost layer.
    guarded: Router,
    lanes: Lanes,
    guard: Guard,
}

impl Door {
    /// `app` (the MCP routes, and the routes of `guard`'s families beside them) behind `guard`;
    /// `lanes` are the MCP routes of `app` whose POSTs skip its router.
    pub fn new(app: Router, lanes: Lanes, guard: Guard) -> Door {
        let guarded = app.layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            self::guard,
        ));
        Door(Arc::new(Inner {
            guarded,
            lanes,
            guard,
        }))
    }

    /// The answer to one request.
    pub(crate) async fn serve(&self, mut request: Request<Body>) -> Response {
        let inner = &self.0;
        let lane = match *request.method() {
            Method::POST => inner.lanes.0.get(request.uri().path()).cloned(),
            _ => None,
        };
        if let Some(lane) = lane {
            return match inner.guard.admit(&mut request).await {
                Ok(()) => lane(request).await,
                Err(answer) => answer,
            };
        }
        let mut app = inner.guarded.clone();
        let ready = std::future::poll_fn(|cx| {
            tower_service::Service::<Request<Body>>::poll_ready(&mut app, cx)
        })
        .await;
        let answered: Result<Response, Infallible> = match ready {
            Ok(()) => tower_service::Service::call(&mut app, request).await,
            Err(never) => match never {},
        };
        match answered {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use axum::http::StatusCode;
    use axum::routing::any;
    use mcplex_catalog::Scope;

    use super::*;
    use crate::Caller;
    use crate::access::{Admission, Authenticator, Family, RouteGuard};

    /// One agent token, `agent-token`, and the admin key `admin-key`.
    struct OneToken;

    impl Authenticator for OneToken {
        fn agent(&self, token: &str) -> Option<Caller> {
            (token == "agent-token").then(|| Caller {
                token: Some("agent".into()),
                scope: Scope::nothing(),
                credential: None,
            })
        }
        fn is_admin(&self, key: &str) -> bool {
            key == "admin-key"
        }
        fn in_force(&self, name: &str) -> bool {
            name == "agent"
        }
    }

    /// Which way each request went, and with which caller.
    type Seen = Arc<Mutex<Vec<(&'static str, Option<Option<Arc<str>>>)>>>;

    /// The guard of the family `/fam`: lets a request on only with `x-ok`.
    struct NeedsOk;

    impl RouteGuard for NeedsOk {
        fn admit<'a>(&'a self, _: &'a Guard, request: &'a mut Request<Body>) -> Admission<'a> {
            let ok = request.headers().contains_key("x-ok");
            Box::pin(async move {
                match ok {
                    true => Ok(()),
                    false => Err(Response::builder()
                        .status(StatusCode::IM_A_TEAPOT)
                        .body(Body::empty())
                        .unwrap_or_default()),
                }
            })
        }
    }

    fn door(seen: &Seen) -> Door {
        let guard = Guard {
            trusted_hosts: Arc::new(Vec::new()),
            require_auth: true,
            max_body_bytes: 64,
            auth: Arc::new(OneToken),
            oauth: None,
            families: Arc::new(vec![Family::new("/fam", NeedsOk)]),
        };
        let by_router = seen.clone();
        let app = Router::new().route(
            "/mcp",
            any(move |request: Request<Body>| {
                let seen = by_router.clone();
                async move {
                    let caller = request
                        .extensions()
                        .get::<Caller>()
                        .map(|c| c.token.clone());
                    seen.lock().expect("lock").push(("router", caller));
                    StatusCode::OK
                }
            }),
        );
        let by_lane = seen.clone();
        let mut lanes = Lanes::default();
        let lane: Lane = Arc::new(move |request: Request<Body>| {
            let caller = request
                .extensions()
                .get::<Caller>()
                .map(|c| c.token.clone());
            by_lane.lock().expect("lock").push(("lane", caller));
            Box::pin(async { Response::new(Body::empty()) })
        });
        lanes.0.insert("/mcp".to_owned(), lane);
        Door::new(app, lanes, guard)
    }

    fn request(method: Method, host: &str, token: Option<&str>, body: &str) -> Request<Body> {
        let mut builder = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", host);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        builder
            .header("content-length", body.len())
            .body(Body::from(body.to_owned()))
            .expect("request")
    }

    #[tokio::test]
    async fn posts_take_the_lane_and_everything_else_the_router_both_behind_the_guard() {
        let seen = Seen::default();
        let door = door(&seen);
        let served = |method, host, token, body| door.serve(request(method, host, token, body));
        let agent = Some(Some(Arc::<str>::from("agent")));

        // Let through, each its own way, with the caller the token stands for.
        let post = served(Method::POST, "127.0.0.1", Some("agent-token"), "{}").await;
        let get = served(Method::GET, "127.0.0.1", Some("agent-token"), "").await;
        assert_eq!(
            (post.status(), get.status()),
            (StatusCode::OK, StatusCode::OK)
        );
        let admin = served(Method::POST, "localhost:9", Some("admin-key"), "{}").await;
        assert_eq!(admin.status(), StatusCode::OK);
        assert_eq!(
            *seen.lock().expect("lock"),
            vec![
                ("lane", agent.clone()),
                ("router", agent),
                ("lane", Some(None))
            ]
        );

        // Refused the same way by both: no credential, a wrong one, a foreign Host, too big.
        let big = "x".repeat(65);
        let cases = [
            (None, "127.0.0.1", "{}", StatusCode::UNAUTHORIZED),
            (Some("wrong"), "127.0.0.1", "{}", StatusCode::UNAUTHORIZED),
            (
                Some("agent-token"),
                "evil.example",
                "{}",
                StatusCode::FORBIDDEN,
            ),
            (
                Some("agent-token"),
                "127.0.0.1",
                big.as_str(),
                StatusCode::PAYLOAD_TOO_LARGE,
            ),
        ];
        for (token, host, body, status) in cases {
            for method in [Method::POST, Method::GET] {
                let answer = served(method.clone(), host, token, body).await;
                assert_eq!(answer.status(), status, "{method} {token:?} {host}");
            }
        }
        assert_eq!(
            seen.lock().expect("lock").len(),
            3,
            "no refused request got through"
        );
    }

    #[tokio::test]
    async fn a_familys_paths_pass_the_edge_then_its_own_guard_instead_of_the_mcp_rules() {
        let door = door(&Seen::default());
        let at = |path: &str, host: &str, ok: bool| {
            let mut builder = Request::builder().uri(path).header("host", host);
            if ok {
                builder = builder.header("x-ok", "1");
            }
            door.serve(builder.body(Body::empty()).expect("request"))
        };
        // No credential, yet past the guard: the family's rule, not the MCP routes' (404: no
        // route is served there in this test).
        for path in ["/fam", "/fam/", "/fam/x/y"] {
            assert_eq!(
                at(path, "127.0.0.1", true).await.status(),
                StatusCode::NOT_FOUND
            );
            assert_eq!(
                at(path, "127.0.0.1", false).await.status(),
                StatusCode::IM_A_TEAPOT
            );
        }
        // The edge checks come first, and a path the family does not own is an MCP path's.
        let foreign = at("/fam", "evil.example", true).await;
        assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
        let beside = at("/famx", "127.0.0.1", true).await;
        assert_eq!(beside.status(), StatusCode::UNAUTHORIZED);
    }
}
