//! Two staff members accept the same call at once (DECISIONS §14): the
//! store's conditional write lets exactly one win, and the other is the 409
//! naming the winner, every time. On SQLite and on moto, and through the
//! Lambda functions (scripts/test-lambda-watch).

mod alarms_support;

use std::time::Instant;

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
