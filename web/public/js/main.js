document.getElementById("app").textContent = "Foursquare Race";
