//! From a request body to a typed request (spec 2, DECISIONS §3): the JSON
//! envelope with `data` as sent ([`envelope`]), the 422 catalogue
//! ([`validation`]), the signing fields every signed request shares
//! ([`signed`]), the display and element requests ([`parse`]) and an alarm
//! server's answer to a call ([`alarm_response`]) and a central system's
//! heartbeat ([`heartbeat`]).

pub(crate) mod alarm_response;
pub(crate) mod envelope;
pub(crate) mod heartbeat;
pub(crate) mod parse;
pub(crate) mod signed;
pub(crate) mod validation;
