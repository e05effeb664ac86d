"""One module per algorithm family's dashboard page (see :class:`explorer.dashboard.page.Page`)."""
