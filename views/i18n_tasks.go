package views

// tasksText is the text of the tasks pages.
var tasksText = text{}
