package views

// ledgerText is the text of the ledger pages.
var ledgerText = text{}
