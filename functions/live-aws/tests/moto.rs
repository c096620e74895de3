//! The connections table on moto (a DynamoDB-compatible server, see
//! store_conformance::moto): the table as tables.rs makes it for tests, and
//! the real requests the mocks cannot check (key conditions, the
//! `by_connection` index, the TTL). The data table's stream is the
//! end-to-end test's (tests/tests/live_aws.rs), which turns it on as the
//! stack has it.

use aws_sdk_dynamodb::types::TimeToLiveStatus;
use chrono::Utc;

use nurse_call_core::Scope;
use nurse_call_dynamodb::tables::create_connections_table;
use nurse_call_dynamodb::{Timeouts, sdk_config};
use nurse_call_live_aws::connections::{Connection, Connections};
use store_conformance::moto;

const VISITOR: &str = "0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4";

fn connection(id: &str, scope: Scope, sections: &[&str], display: Option<&str>) -> Connection {
    Connection {
        id: id.into(),
        scope,
        sections: sections.iter().map(|s| s.to_string()).collect(),
        display_id: display.map(str::to_string),
        staff_id: None,
    }
}

#[tokio::test]
async fn connections_are_recorded_listed_per_scope_found_by_id_and_forgotten() {
    let endpoint = moto::endpoint();
    let config = sdk_config(Some(&endpoint), Timeouts::SLOW_STAND_IN).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = format!("{}connections", moto::unique_prefix());
    assert!(create_connections_table(&client, &table).await.unwrap());
    assert!(
        !create_connections_table(&client, &table).await.unwrap(),
        "an existing table is left alone"
    );
    let ttl = client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.attribute_name(), Some("ttl"));
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));

    let connections = Connections::new(client.clone(), &table);
    let station = connection("st=", Scope::installation(), &["S1", "S2"], Some("d-1"));
    let corridor = connection("co=", Scope::installation(), &[], Some("d-2"));
    let visitor = connection("vi=", Scope::consumer(VISITOR), &[], None);
    let now = Utc::now();
    for each in [&station, &corridor, &visitor] {
        connections.put(each, now).await.unwrap();
    }

    let mut installation = connections.of_scope(&Scope::installation()).await.unwrap();
    installation.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(installation, [corridor.clone(), station.clone()]);
    assert_eq!(
        connections
            .of_scope(&Scope::consumer(VISITOR))
            .await
            .unwrap(),
        [visitor]
    );
    assert_eq!(
        connections.scopes_of("vi=").await.unwrap(),
        [Scope::consumer(VISITOR)]
    );

    connections
        .delete(&Scope::installation(), "st=")
        .await
        .unwrap();
    assert_eq!(
        connections.of_scope(&Scope::installation()).await.unwrap(),
        [corridor]
    );
    assert_eq!(
        connections.scopes_of("st=").await.unwrap(),
        Vec::<Scope>::new()
    );
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}
