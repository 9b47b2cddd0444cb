//! Slow request bodies without a credential cannot lock the operator out (the third
//! adversarial review's first defect): connections that only wait for such bodies make room for
//! newcomers as idle ones do, and a login body larger than any login is refused at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::harness::{Gateway, eventually, fixture_server};

/// A `POST /ui/login` that declares `length` bytes and sends one.
fn slow_login(gateway: &Gateway, length: usize) -> TcpStream {
    let mut stream = TcpStream::connect(gateway.authority()).expect("connect");
    let head = format!(
        "POST /ui/login HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\r\nk",
        gateway.authority()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream
}

#[test]
fn slow_login_bodies_leave_room_for_the_operator() {
    let gateway = Gateway::start(json!({
        "max_connections": 16,
        "mcpServers": {"fixture": fixture_server("fixture", &[])}
    }));
    gateway.wait_ready();
    gateway.api_key();

    // A body no login needs: refused before it is read.
    let mut huge = slow_login(&gateway, 100_000);
    huge.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut answer = String::new();
    let _ = huge.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Every place taken by a login body arriving a byte at a time.
    let held: Vec<TcpStream> = (0..16).map(|_| slow_login(&gateway, 4000)).collect();
    std::thread::sleep(Duration::from_millis(300));
    // The operator still gets in, at once and again.
    for _ in 0..3 {
        let (status, body) = eventually("the API to answer", Duration::from_secs(5), || {
            let (status, body) = gateway.api("GET", "/api/v1/servers", "");
            (status != 503).then_some((status, body))
        });
        assert_eq!(status, 200, "{body}");
    }
    drop(held);
}
