//! A session's tests: where its messages go, and how its answer streams are kept, resumed
//! and forgotten.
#![allow(deprecated)] // logging: the commonest message that belongs to no request
use super::*;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam};

#[tokio::test]
async fn progress_goes_to_its_request_and_the_rest_to_the_get_stream() {
    // No room left in the budget the answer streams share: the GET stream's cache is how these
    // messages reach the client, and keeps them all the same.
    let mut state = State::new(KeptBudget::new(0), KeptBudget::new(0));
    let (events, mut received) = mpsc::channel(1);
    let token = ProgressToken(RequestId::Number(9));
    state.requests.insert(
        RequestId::Number(1),
        InFlight {
            cancel: CancellationToken::new(),
            progress: Some(token.clone()),
            events,
        },
    );
    let progress = ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
        rmcp::model::Notification::new(ProgressNotificationParam::new(token, 0.5)),
    ));
    route(&mut state, progress.clone());
    route(&mut state, progress);
    assert!(received.try_recv().is_ok(), "progress reached its request");
    assert_eq!(
        state.common.cached(),
        1,
        "the request's queue was full: the GET stream took the second"
    );
    let log = ServerJsonRpcMessage::notification(ServerNotification::LoggingMessageNotification(
        rmcp::model::Notification::new(LoggingMessageNotificationParam::new(
            LoggingLevel::Info,
            serde_json::json!("x"),
        )),
    ));
    route(&mut state, log);
    assert!(received.try_recv().is_err(), "a log is not the request's");
    assert_eq!(state.common.cached(), 2, "the log waits for the GET stream");
}

#[derive(Clone)]
struct Nothing;
impl rmcp::ServerHandler for Nothing {}

/// A session serving nothing, its answer streams drawing on `kept`.
pub(crate) fn session(kept: Arc<KeptBudget>) -> Session {
    Session::start(
        "s".into(),
        Nothing,
        CancellationToken::new(),
        kept,
        KeptBudget::new(usize::MAX),
    )
}

#[tokio::test]
async fn a_sessions_answer_streams_draw_on_the_budget_it_was_given() {
    let kept = KeptBudget::new(1 << 20);
    let session = session(kept.clone());
    let (live, _reader) = mpsc::channel(2);
    let log = session.answer_log(0, &[Bytes::from("first")], live);
    assert_eq!(kept.used(), 5);
    drop(log);
    drop(session);
    assert_eq!(kept.used(), 0, "given back with the session");
}

fn texts(events: &[Bytes]) -> Vec<String> {
    events
        .iter()
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .collect()
}

#[tokio::test]
async fn an_answer_stream_is_kept_for_resumption_and_its_connection_let_go() {
    let session = session(KeptBudget::new(usize::MAX));
    let (live, _reader) = mpsc::channel(2);
    let log = session.answer_log(3, &[Bytes::from_static(b"p")], live.clone());
    for event in ["e1", "e2", "e3"] {
        let connection = log.keep(&Bytes::from(event)).expect("a connection");
        assert!(connection.same_channel(&live));
    }
    log.let_go(&live);
    assert!(log.keep(&Bytes::from("e4")).is_none(), "let go");
    let (events, rest) = session.resume_answer(3, 0).expect("kept");
    assert_eq!(texts(&events), ["e1", "e2", "e3", "e4"]);
    assert!(rest.is_some(), "still being written");
    let resumed = log
        .keep(&Bytes::from("e5"))
        .expect("the resumed connection");
    log.let_go(&live);
    assert!(
        log.keep(&Bytes::from("e6"))
            .is_some_and(|now| now.same_channel(&resumed)),
        "letting the old connection go leaves the resumed one"
    );
    drop(log);
    let (events, rest) = session.resume_answer(3, 4).expect("kept after it ends");
    assert_eq!(texts(&events), ["e5", "e6"]);
    assert!(rest.is_none(), "finished");
    let (events, _) = session.resume_answer(3, u64::MAX).expect("kept");
    assert!(events.is_empty(), "after the last event there is nothing");
    assert!(session.resume_answer(4, 0).is_none(), "no such stream");
    session.idle_since(Instant::now() + REPLAY_KEPT);
    assert!(session.resume_answer(3, 0).is_none(), "past its time");
}

#[tokio::test]
async fn finished_answer_streams_past_the_count_or_bytes_are_forgotten_oldest_first() {
    let session = session(KeptBudget::new(usize::MAX));
    let finished = |stream: u64, bytes: usize| {
        let (live, _reader) = mpsc::channel(1);
        let log = session.answer_log(stream, &[], live);
        log.keep(&Bytes::from(vec![b'x'; bytes]));
    };
    let kept = |stream| session.resume_answer(stream, 0).is_some();
    for stream in 0..=FINISHED_KEPT as u64 {
        finished(stream, 1);
    }
    assert!(!kept(0), "the oldest went");
    assert!((1..=FINISHED_KEPT as u64).all(kept));
    let big = REPLAY_BYTES;
    let first_big = FINISHED_KEPT as u64 + 1;
    for stream in first_big..first_big + 3 {
        finished(stream, big);
    }
    assert!(
        !kept(first_big),
        "two answers of a mebibyte fill the budget"
    );
    assert!(kept(first_big + 1) && kept(first_big + 2));
    let (live, _reader) = mpsc::channel(1);
    let _writing = session.answer_log(99, &[Bytes::from(vec![b'x'; big])], live);
    finished(100, 1);
    assert!(kept(99), "a stream still being written is never forgotten");
}

#[tokio::test]
async fn a_stream_whose_connection_broke_outlasts_those_delivered() {
    let session = session(KeptBudget::new(usize::MAX));
    let (live, reader) = mpsc::channel(1);
    let lost = session.answer_log(0, &[], live);
    lost.keep(&Bytes::from_static(b"answer"));
    drop(reader);
    drop(lost);
    for stream in 1..=FINISHED_KEPT as u64 {
        let (live, _reader) = mpsc::channel(1);
        let log = session.answer_log(stream, &[], live);
        log.keep(&Bytes::from_static(b"x"));
        drop(log);
    }
    assert!(
        session.resume_answer(0, 0).is_some(),
        "the answer its client may come back for"
    );
    assert!(
        session.resume_answer(1, 0).is_none(),
        "the oldest delivered one went instead"
    );
}

#[tokio::test]
async fn an_answer_past_the_byte_cap_is_not_kept() {
    let session = session(KeptBudget::new(usize::MAX));
    let (live, _reader) = mpsc::channel(2);
    let log = session.answer_log(0, &[], live);
    log.keep(&Bytes::from(vec![b'x'; REPLAY_BYTES + 1]));
    log.keep(&Bytes::from_static(b"small"));
    let (events, _) = session.resume_answer(0, 0).expect("kept");
    assert_eq!(texts(&events), ["small"]);
    let (live, _reader) = mpsc::channel(2);
    let first = [
        Bytes::from(vec![b'x'; REPLAY_BYTES + 1]),
        Bytes::from_static(b"small"),
    ];
    let _log = session.answer_log(1, &first, live);
    let (events, _) = session.resume_answer(1, 0).expect("kept");
    assert_eq!(
        texts(&events),
        ["small"],
        "a stream's first events are capped too"
    );
}

#[tokio::test]
async fn a_session_takes_at_most_its_limit_of_requests_in_flight() {
    let session = session(KeptBudget::new(usize::MAX));
    let mut begun: Vec<Begun> = (0..MAX_IN_FLIGHT)
        .map(|n| {
            let id = RequestId::Number(i64::try_from(n).expect("small"));
            session
                .begin(&id, None)
                .map_err(|e| format!("{e:?}"))
                .expect("begun")
        })
        .collect();
    let next = RequestId::Number(1_000);
    assert_eq!(session.begin(&next, None).err(), Some(NotBegun::Busy));
    assert_eq!(
        session.begin(&RequestId::Number(0), None).err(),
        Some(NotBegun::SameId),
        "a repeated id is told as such, full or not"
    );
    // One handler is done: its place is free again.
    begun.pop();
    assert!(session.begin(&next, None).is_ok());
}
