//! Two staff members accept the same call at once (DECISIONS §14): the
//! store's conditional write lets exactly one win, and the other is the 409
//! naming the winner, every time. A hundred sign-ons and sign-offs in a row
//! make as many looks at the same alarms at once: a look that loses the race
//! for the write tries again until it is done (issue 45, point 7). On SQLite
//! and on moto, and (the accepts) through the Lambda functions
//! (scripts/test-lambda-watch).

mod alarms_support;

use std::time::{Duration, Instant};

use alarms_support::*;
use blackbox_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_accepts_at_once_one_wins_and_the_other_is_409_a_hundred_times() {
    let server = Server::sandbox();
    let visitor = server.new_consumer().await;
    let anna = staff(&server, &visitor, "Anna", &[]).await;
    let ben = staff(&server, &visitor, "Ben", &[]).await;
    sign_on(&server, &anna, &[]).await;
    sign_on(&server, &ben, &[]).await;
    let started = Instant::now();
    let mut winners = [0, 0];
    // Ten rounds at a time, each its own call: two accepts race per call.
    // A hundred rounds on the local server (both stores); through the
    // Lambda functions, one test at a time on one shared moto, twenty.
    let batches = if external::base_url().is_some() {
        2
    } else {
        10
    };
    for batch in 0..batches {
        let rounds = (0..10).map(|i| {
            let (server, visitor, anna, ben) = (&server, &visitor, &anna, &ben);
            async move {
                let round = batch * 10 + i;
                let id = open(server, visitor, &format!("R{round}"), "Notruf", None).await;
                let (a, b) = tokio::join!(
                    respond(server, anna, id, "accepted"),
                    respond(server, ben, id, "accepted")
                );
                (round, a, b)
            }
        });
        for (round, a, b) in futures_util::future::join_all(rounds).await {
            let mut statuses = [a.status, b.status];
            statuses.sort_unstable();
            assert_eq!(statuses, [200, 409], "round {round}: {a:?} {b:?}");
            let (winner, loser, index) = if a.status == 200 {
                (&a, &b, 0)
            } else {
                (&b, &a, 1)
            };
            winners[index] += 1;
            let by = &winner.data()["alarm"]["accepted_by"];
            assert_eq!(
                loser.json()["accepted_by"],
                *by,
                "round {round}: the 409 names the winner"
            );
            assert_eq!(loser.json()["messages"][0]["code"], "already_accepted");
        }
    }
    println!(
        "{} rounds of two accepts at once: exactly one 200 and one 409 each time \
         (Anna won {}, Ben {}) in {:.1} s",
        batches * 10,
        winners[0],
        winners[1],
        seconds(started)
    );
}

/// Signs `member` on for `sections`, or off (`None`), asserting 200.
async fn set_duty(server: &Server, member: &Member, duty: Option<&[&str]>) {
    match duty {
        Some(sections) => {
            sign_on(server, member, sections).await;
        }
        None => {
            as_staff(
                server,
                reqwest::Method::DELETE,
                STAFF_DUTY,
                &member.token,
                None,
            )
            .await
            .expect_status(200);
        }
    }
}

/// Whether a duty for `duty`'s sections (`None`: off duty) covers `section`.
fn covers(duty: Option<&[&str]>, section: &str) -> bool {
    duty.is_some_and(|sections| sections.is_empty() || sections.contains(&section))
}

/// What `GET /api/v1/staff/calls` says of the calls `ids`: whether each
/// alerts `member`.
async fn alerting(server: &Server, member: &Member, ids: &[i64]) -> Vec<bool> {
    let calls = staff_calls(server, member).await;
    ids.iter()
        .map(|id| {
            calls
                .iter()
                .any(|c| c["id"] == *id && c["alerting"] == true)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_sign_ons_and_offs_in_a_row_leave_no_look_undone() {
    // No receipt comes from these pages: with the default deadline (30 s,
    // DECISIONS §18) the calls would go on to the house early on moto.
    let server = Server::start(Options::sandbox().env("RECEIPT_SECONDS", "600"));
    let visitor = server.new_consumer().await;
    // Anna stays on duty for section 1 and Ben for section 2 throughout: no
    // section's level is ever empty, which would start the house at once.
    let (anna, ben) = anna_and_ben_on_duty(&server, &visitor).await;
    let mut crew = Vec::new();
    for name in ["Cem", "Dora", "Emil", "Fritz"] {
        crew.push(staff(&server, &visitor, name, &[]).await);
    }
    // Everyone's staff page open: each has a channel (DECISIONS §18).
    let mut pages = Vec::new();
    for member in crew.iter().chain([&anna, &ben]) {
        pages.push(connect_staff(&server, member).await);
    }
    // Re-alerts after 60 s and more, the house after 300 s: within the
    // test only the duties decide who is alerted.
    let calls = [
        (
            open(&server, &visitor, "Z1", "Hotelruf", Some("1")).await,
            "1",
        ),
        (
            open(&server, &visitor, "Z2", "Normalruf", Some("1")).await,
            "1",
        ),
        (
            open(&server, &visitor, "Z3", "Geräteruf", Some("2")).await,
            "2",
        ),
    ];
    let ids: Vec<i64> = calls.iter().map(|(id, _)| *id).collect();

    const DUTIES: [Option<&[&str]>; 5] = [
        Some(&["1"]),
        None,
        Some(&["2"]),
        Some(&[]),
        Some(&["1", "2"]),
    ];
    const ROUNDS: usize = 25;
    // The four at once, each 25 changes in a row: 100 sign-ons and
    // sign-offs. Each ends on another duty (the house, 1 and 2, 1, off).
    let started = Instant::now();
    let last: Vec<Option<&[&str]>> =
        futures_util::future::join_all(crew.iter().enumerate().map(|(i, member)| {
            let server = &server;
            async move {
                let mut duty = None;
                for round in 0..ROUNDS {
                    duty = DUTIES[(i + round * 3 + 1) % DUTIES.len()];
                    set_duty(server, member, duty).await;
                }
                duty
            }
        }))
        .await;
    let changed = started.elapsed();

    let everyone: Vec<(&Member, Option<&[&str]>)> = [(&anna, DUTIES[0]), (&ben, DUTIES[2])]
        .into_iter()
        .chain(crew.iter().zip(last))
        .collect();
    // On moto the looks of the last changes are still queued some 15 s
    // after them (several requests each, a burst of them at once).
    let deadline = Instant::now() + 6 * WAIT;
    for (member, duty) in &everyone {
        let expected: Vec<bool> = calls
            .iter()
            .map(|(_, section)| covers(*duty, section))
            .collect();
        loop {
            let found = alerting(&server, member, &ids).await;
            if found == expected {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} on duty for {duty:?}: alerted for {found:?} of the calls in sections \
                 {:?}, expected {expected:?}",
                member.name,
                calls.map(|(_, section)| section)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let settled = started.elapsed();

    let logs = server.logs();
    let count = |text: &str| logs.iter().filter(|line| line.contains(text)).count();
    println!(
        "{} sign-ons and sign-offs in {:.1} s; everyone on duty alerted for their \
         sections' calls {:.1} s after the first; {} alarm steps written, {} looks \
         handed on under contention, {} \"alarm not looked at\", {} \"store unavailable\"",
        crew.len() * ROUNDS,
        changed.as_secs_f64(),
        settled.as_secs_f64(),
        count("alarm stepped"),
        count("handed on to a fresh look"),
        count("alarm not looked at"),
        count("store unavailable"),
    );
    assert_eq!(count("store unavailable"), 0, "no store was unavailable");
    assert_eq!(count("alarm not looked at"), 0, "every look was done");
    drop(pages);
}
