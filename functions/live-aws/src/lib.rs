//! The displays' live feed in AWS (DECISIONS §11): the same messages as the
//! local server's WebSocket, carried by API Gateway's WebSocket API. Every
//! change to the data table reaches the broadcast function through the
//! table's DynamoDB stream; the connect function keeps the table of open
//! connections. Core stays free of AWS types: they meet it here.
//!
//! Read in this order:
//!
//! 1. [`change`]: a stream record → the change a display shows, if any.
//! 2. [`connections`]: the connections table.
//! 3. [`poster`]: one message to one connection (the management API).
//! 4. [`broadcast`]: the stream batch handler (order, concurrency, failures).
//! 5. [`connect`]: the `$connect` and `$disconnect` handler.
//! 6. [`setup`]: both functions' state from the environment.

pub mod broadcast;
pub mod change;
pub mod connect;
pub mod connections;
pub mod poster;
pub mod setup;
