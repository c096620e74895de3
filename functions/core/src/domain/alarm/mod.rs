//! Alarm routing (DECISIONS §14): a call reaches people, not only a wall.
//!
//! - [`policy`]: per call type, who is alerted when (levels).
//! - [`staff`]: staff members, their duty, and who a level's audience is.
//! - [`state`]: a call's alarm as kept.
//! - [`engine`]: the pure state machine from an alarm and the situation now
//!   to the alarm to keep and the messages to send.
//! - [`receipt`]: the ids a phone posts back once it showed an alert (§18).
//! - [`audit`]: the lines of a call's audit (alerts, responses, levels, stops).
//! - [`timer`]: an alarm's timer as a delayed queue message (AWS, §17).
//!
//! A supplementary path (ZVEI 33021): nothing here ever closes a call.

pub(crate) mod audit;
pub(crate) mod engine;
pub(crate) mod policy;
pub(crate) mod receipt;
pub(crate) mod staff;
pub(crate) mod state;
pub(crate) mod timer;

pub use engine::{CancelReason, Effect, Refusal, Situation, Step, receive, respond, step};
pub use policy::{Audience, Level, Policy};
pub use staff::{Duty, Roster, Staff};
pub use state::{Alarm, AlarmStatus, Answer, Recipient, Response, StaffRef};
