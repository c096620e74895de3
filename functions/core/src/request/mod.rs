//! From a request body to a typed request (spec 2, DECISIONS §3): the JSON
//! envelope with `data` as sent ([`envelope`]), the 422 catalogue
//! ([`validation`]), the signing fields every signed request shares
//! ([`signed`]), the display and element requests ([`parse`]) and an alarm
//! server's answer to a call ([`alarm_response`]).

pub mod alarm_response;
pub mod envelope;
pub mod parse;
pub mod signed;
pub mod validation;
