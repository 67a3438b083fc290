use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Default)]
pub struct Ledger {
    balances: HashMap<String, i64>,
}

impl Ledger {
    pub fn deposit(&mut self, who: &str, amount: i64) -> i64 {
        let entry = self.balances.entry(who.to_string()).or_insert(0);
        *entry += amo<@a>unt;
        *entry
    }

    pub fn total(&self) -> i64 {
        self.balances.values().sum()
    }
}

impl fmt::Display for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} accounts", self.balances.len())
    }
}

mod tests {
    pub fn check() -> bool {
        let double = |x: i64| x * <@closure>2;
        double(2) == 4
    }
}
