//! One duty look at a time per scope. A sign-on or sign-off asks for a look
//! at the scope's running alarms ([`super::AlarmRunner::look_at_scope_later`]);
//! 49 sign-ons in a row once made 49 looks at each alarm at once, which
//! mostly lost their races to each other (issue 45). Now a change while a
//! round runs only asks that round to go once more when it ends: every
//! change is still followed by a round that starts after its commit (and
//! so reads it), and no two rounds of a scope race.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::domain::model::Scope;

/// The scopes whose round runs, each with whether a change came meanwhile.
#[derive(Debug, Default)]
pub(crate) struct ScopeRounds {
    running: Mutex<HashMap<Scope, bool>>,
}

impl ScopeRounds {
    /// A change in `scope`: `Some(round)` when the caller is to run the
    /// rounds (none ran), `None` when the running round goes once more.
    pub(crate) fn ask(self: &Arc<Self>, scope: &Scope) -> Option<Round> {
        let mut running = self.running.lock().expect("scope rounds");
        match running.get_mut(scope) {
            Some(again) => {
                *again = true;
                None
            }
            None => {
                running.insert(scope.clone(), false);
                Some(Round {
                    rounds: Arc::clone(self),
                    scope: scope.clone(),
                    ended: false,
                })
            }
        }
    }
}

/// The right to run `scope`'s rounds; dropping it (the task ended, or
/// panicked) frees the scope for the next change.
#[derive(Debug)]
pub(crate) struct Round {
    rounds: Arc<ScopeRounds>,
    scope: Scope,
    /// The scope was freed by [`Round::again`].
    ended: bool,
}

impl Round {
    /// After a round: whether a change came during it (then run another).
    /// If not, the scope is free from here on, in the same step: a change
    /// a moment later starts its own rounds.
    pub(crate) fn again(&mut self) -> bool {
        let mut running = self.rounds.running.lock().expect("scope rounds");
        match running.get_mut(&self.scope) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                running.remove(&self.scope);
                self.ended = true;
                false
            }
        }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        if !self.ended
            && let Ok(mut running) = self.rounds.running.lock()
        {
            running.remove(&self.scope);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_during_a_round_asks_for_exactly_one_more() {
        let rounds = Arc::new(ScopeRounds::default());
        let scope = Scope::installation();
        let mut round = rounds.ask(&scope).expect("nothing ran: this caller runs");
        assert!(rounds.ask(&scope).is_none(), "the running round goes again");
        assert!(rounds.ask(&scope).is_none());
        assert!(round.again(), "two changes: one more round");
        assert!(!round.again(), "nothing since: done");
        let next = rounds.ask(&scope);
        assert!(next.is_some(), "free again at once");
        drop(round);
        assert!(
            rounds.ask(&scope).is_none(),
            "the old round's end frees nothing twice"
        );
        drop(next);
        assert!(rounds.ask(&scope).is_some());
    }

    #[test]
    fn scopes_do_not_wait_for_each_other() {
        let rounds = Arc::new(ScopeRounds::default());
        let _installation = rounds.ask(&Scope::installation()).expect("runs");
        assert!(rounds.ask(&Scope::from_key("visitor")).is_some());
    }
}
