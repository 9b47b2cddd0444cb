//! The connect link: its token, its form, and where a request to begin may come from.

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

#[test]
fn a_proof_holds_for_its_link_only_and_only_for_ten_minutes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::open(dir.path()).expect("store");
    let sign_for = |caller: &str| {
        sign(
            &store,
            &Link {
                server: "github".into(),
                caller: caller.into(),
                ends_at: 10_000,
            },
        )
        .expect("signed")
    };
    let (alice, bob) = (sign_for("oauth:alice"), sign_for("oauth:bob"));
    assert_eq!(link_subject(&store, &alice, 0).as_deref(), Some("alice"));
    assert_eq!(link_subject(&store, &sign_for("agent-a"), 0), None);
    let proof = prove(&store, &alice, 100);
    assert!(proof_holds(&store, &alice, &proof, 100));
    assert!(!proof_holds(
        &store,
        &alice,
        &proof,
        100 + PROOF_LIFETIME_SECS
    ));
    assert!(
        !proof_holds(&store, &bob, &proof, 100),
        "another link's proof"
    );
    assert!(!proof_holds(&store, &alice, "1.2", 0));
    // The page's form holds with this browser's cookie and this link's token only.
    let mut headers = HeaderMap::new();
    let token = form_token(&store, &alice, "n1");
    let body = format!("token={token}");
    assert!(
        !form_holds(&store, &alice, &headers, body.as_bytes()),
        "no cookie"
    );
    headers.insert(
        axum::http::header::COOKIE,
        axum::http::HeaderValue::from_static("mcplex_connect_form=n1"),
    );
    assert!(form_holds(&store, &alice, &headers, body.as_bytes()));
    assert!(
        !form_holds(&store, &bob, &headers, body.as_bytes()),
        "another link"
    );
    assert!(!form_holds(&store, &alice, &headers, b"token="));
    assert!(!from_another_site(&headers));
    for site in ["cross-site", "same-site", "none"] {
        headers.insert("sec-fetch-site", axum::http::HeaderValue::from_static(site));
        assert!(from_another_site(&headers), "{site}");
    }
    assert_eq!(
        escape("<a href=\"x\">&'"),
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
    );
}
