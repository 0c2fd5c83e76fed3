package models

// ReadSnapshot lets the tests look inside a snapshot read.
var ReadSnapshot = (*Store).readSnapshot

const MaxLostPerTx = maxLostPerTx
