"""Money: the token ledger, model prices and the calibration of estimates against real usage."""
