//! The cases, one `pub async fn` per behaviour of the [`Store`](nurse_call_core::Store)
//! contract. Each expects a fresh, empty store with the default call types seeded.

mod alarm_races;
mod alarm_retention;
mod alarm_with_writes;
mod alarms;
mod call_types;
mod calls;
mod caps;
mod concurrency;
mod consumers;
mod devices;
mod displays;
mod elements;
mod isolation;
mod listing;
mod mismatches;
mod push;
mod retention;
mod staff;
mod webhook_attention;
mod webhook_endpoints;
mod webhook_log;
mod webhook_outbox;

pub use alarm_races::*;
pub use alarm_retention::*;
pub use alarm_with_writes::*;
pub use alarms::*;
pub use call_types::*;
pub use calls::*;
pub use caps::*;
pub use concurrency::*;
pub use consumers::*;
pub use devices::*;
pub use displays::*;
pub use elements::*;
pub use isolation::*;
pub use listing::*;
pub use mismatches::*;
pub use push::*;
pub use retention::*;
pub use staff::*;
pub use webhook_attention::*;
pub use webhook_endpoints::*;
pub use webhook_log::*;
pub use webhook_outbox::*;
