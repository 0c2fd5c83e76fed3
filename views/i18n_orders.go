package views

// ordersText is the text of the orders pages.
var ordersText = text{}
