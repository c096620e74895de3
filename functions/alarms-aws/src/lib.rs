//! Alarms in AWS (DECISIONS §17), where no process lives long enough to
//! keep a timer: the same engine as the local server's
//! ([`nurse_call_core::AlarmRunner`]), woken by the data table's stream and
//! by delayed messages on an SQS queue.
//!
//! Read in this order:
//!
//! 1. [`wakes`]: what a stream record asks of the engine (pure).
//! 2. [`queues`]: the SQS queues of timers and of pushes.
//! 3. [`event`]: the function's two event sources, stream and queue, told
//!    apart, and Lambda's partial batch responses.
//! 4. [`handler`]: what each batch does.
//! 5. [`minute`]: the stack's minute wake-up: overdue alarms stepped, the
//!    central systems' links swept (DECISIONS §19).
//! 6. [`setup`]: the cold start, from the stack's environment.
//!
//! The rules of a timer (when it is due, how long it is sent on, who
//! schedules it) are `nurse_call_core::alarm`; taking one is
//! [`nurse_call_core::AlarmRunner::take_timer`].

pub mod event;
pub mod handler;
pub mod minute;
pub mod queues;
pub mod setup;
pub mod wakes;
