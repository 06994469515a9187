"""Pure: the app worker's loop, above the view and the policy: a refresh and its deadlines."""
