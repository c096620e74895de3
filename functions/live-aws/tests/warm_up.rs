//! The broadcast's warm-up of the management API (issue 30): the post to a
//! connection that does not exist opens the connection the first real post
//! then uses; a management API out of reach is an error the warm-up logs.

use std::sync::Arc;

use nurse_call_dynamodb::{Timeouts, sdk_config};
use nurse_call_live_aws::poster::{Delivery, Poster, WARM_UP_CONNECTION};
use store_conformance::counting_server::CountingServer;

async fn poster(endpoint: &str) -> Poster {
    let config = sdk_config(Some(endpoint), Timeouts::AWS).await;
    Poster::from_config(&config, &format!("{endpoint}/live"))
}

#[tokio::test]
async fn the_first_post_uses_the_connection_the_warm_up_opened() {
    // As API Gateway: 410 for a connection that does not exist.
    let server = CountingServer::start(
        Arc::new(|request: &str| {
            if request.ends_with(&format!("/{WARM_UP_CONNECTION}")) {
                (410, r#"{"message":"Gone"}"#.to_string())
            } else {
                (200, "{}".to_string())
            }
        }),
        false,
    )
    .await;
    let poster = poster(&server.endpoint()).await;
    poster
        .open_connection()
        .await
        .expect("an answer, 410 included");
    assert_eq!(
        poster.post("abc=", r#"{"type":"x"}"#).await,
        Delivery::Delivered
    );
    assert_eq!(
        server.requests(),
        [
            format!("POST /live/@connections/{WARM_UP_CONNECTION}"),
            "POST /live/@connections/abc%3D".to_string()
        ]
    );
    assert_eq!(server.connections(), 1, "one connection for both");
}

#[tokio::test]
async fn a_management_api_out_of_reach_is_an_error() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let poster = poster(&closed).await;
    assert!(poster.open_connection().await.is_err());
}
